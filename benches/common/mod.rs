//! Shared pieces of the `channels` benchmark.

pub mod peers;
pub mod run;
