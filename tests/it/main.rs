//! Integration tests against real servers (one binary keeps link time down).

mod catalogs;
mod commit_layer;
mod common;
mod datamig;
mod ops;
mod runner;
