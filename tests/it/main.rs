//! Integration tests against real servers (one binary keeps link time down).

mod catalogs;
mod common;
mod ops;
