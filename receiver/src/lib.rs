//! Capture of the board's packets from several ports (UDP sockets or raw
//! Ethernet via libpcap) to capture files striped over several directories.
//! It records packets byte-exact and counts what it sees; it never decodes
//! records beyond what its statistics need.
