//! How the analyses' fixed tables are saved in a partial analysis
//! (docs/format.md §15): arrays as lists, and tables indexed by bank or page
//! as their length and the entries that are not empty.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `[T; N]` as a list of N items.
pub mod array {
    use super::*;

    pub fn serialize<S: Serializer, T: Serialize, const N: usize>(
        a: &[T; N],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        a.as_slice().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>, const N: usize>(
        d: D,
    ) -> Result<[T; N], D::Error> {
        let v = Vec::<T>::deserialize(d)?;
        let n = v.len();
        v.try_into()
            .map_err(|_| D::Error::custom(format!("a list of {N} items, not {n}")))
    }
}

/// A table as its length and its `(index, value)` entries that are not
/// the default (zero).
#[derive(Serialize, Deserialize)]
struct Sparse<T> {
    len: usize,
    entries: Vec<(usize, T)>,
}

fn save<S: Serializer, T: Serialize + Clone + PartialEq>(
    t: &[T],
    empty: T,
    s: S,
) -> Result<S::Ok, S::Error> {
    Sparse {
        len: t.len(),
        entries: t
            .iter()
            .enumerate()
            .filter(|(_, v)| **v != empty)
            .map(|(i, v)| (i, v.clone()))
            .collect(),
    }
    .serialize(s)
}

fn load<'de, D: Deserializer<'de>, T: Deserialize<'de> + Clone>(
    d: D,
    empty: T,
) -> Result<Vec<T>, D::Error> {
    let sparse = Sparse::<T>::deserialize(d)?;
    if sparse.len > 1 << 28 {
        return Err(D::Error::custom(format!(
            "a table of {} entries is too long",
            sparse.len
        )));
    }
    let mut t = vec![empty; sparse.len];
    for (i, v) in sparse.entries {
        *t.get_mut(i)
            .ok_or_else(|| D::Error::custom(format!("entry {i} beyond the table")))? = v;
    }
    Ok(t)
}

/// Empty entries are zero.
pub mod sparse {
    use super::*;

    pub fn serialize<S: Serializer, T: Serialize + Clone + PartialEq + Default>(
        t: &[T],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        save(t, T::default(), s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de> + Clone + Default>(
        d: D,
    ) -> Result<Vec<T>, D::Error> {
        load(d, T::default())
    }
}

/// Empty entries are `u32::MAX`.
pub mod sparse_max {
    use super::*;

    pub fn serialize<S: Serializer>(t: &[u32], s: S) -> Result<S::Ok, S::Error> {
        save(t, u32::MAX, s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
        load(d, u32::MAX)
    }
}

/// A count per small key (`Vec<u64>` indexed by key) as the map of the
/// keys counted to their counts: the JSON of a `BTreeMap<u32, u64>`.
pub mod count_map {
    use super::*;
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(t: &[u64], s: S) -> Result<S::Ok, S::Error> {
        let map: BTreeMap<u32, u64> = t
            .iter()
            .enumerate()
            .filter(|(_, &n)| n != 0)
            .map(|(k, &n)| (k as u32, n))
            .collect();
        map.serialize(s)
    }

    /// Into a table of `LEN` entries; a key beyond it is an error.
    pub fn deserialize<'de, D: Deserializer<'de>, const LEN: usize>(
        d: D,
    ) -> Result<Vec<u64>, D::Error> {
        let map = BTreeMap::<u32, u64>::deserialize(d)?;
        let mut t = vec![0; LEN];
        for (k, n) in map {
            *t.get_mut(k as usize)
                .ok_or_else(|| D::Error::custom(format!("key {k} beyond the table")))? = n;
        }
        Ok(t)
    }
}
