use super::{axis_number, Axis};

#[test]
fn counts_are_labelled_in_three_significant_digits() {
    for (v, want) in [
        (600000.0, "600k"),
        (1500000.0, "1.5M"),
        (5168401.0, "5.17M"),
        (731170.0, "731k"),
        (999.0, "999"),
        (0.0, "0"),
    ] {
        assert_eq!(super::count_label(&v), want, "{v}");
    }
}

#[test]
fn ticks_step_by_one_two_or_five_times_a_power_of_ten_from_zero() {
    for (lo, hi, n, want) in [
        (0.0, 78.6, 6, vec![0.0, 20.0, 40.0, 60.0]),
        (
            0.0,
            5300.0,
            7,
            vec![0.0, 1000.0, 2000.0, 3000.0, 4000.0, 5000.0],
        ),
        (0.0, 1.0, 7, vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (-2.4, 81.0, 6, vec![0.0, 20.0, 40.0, 60.0, 80.0]),
        (0.0, 0.37, 6, vec![0.0, 0.1, 0.2, 0.3]),
    ] {
        let ticks = Axis::linear(lo, hi, n).ticks;
        assert_eq!(ticks.len(), want.len(), "{lo}..{hi}: {ticks:?}");
        for (t, w) in ticks.iter().zip(&want) {
            assert!((t - w).abs() < 1e-9, "{lo}..{hi}: {ticks:?}");
        }
    }
}

#[test]
fn tick_labels_carry_no_needless_fraction() {
    for (v, want) in [
        (4500.0, "4500"),
        (10.0, "10"),
        (0.0, "0"),
        (-0.0, "0"),
        (1e-15, "0"),
        (2.5, "2.5"),
        (0.125, "0.125"),
        (-37.5, "-37.5"),
        (0.1 + 0.2, "0.3"),
        (1234567.0, "1234567"),
    ] {
        assert_eq!(axis_number(&v), want, "{v}");
    }
}
