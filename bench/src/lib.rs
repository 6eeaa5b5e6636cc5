//! `mnemo-bench`'s shared part: the hostile frames its fuzz command and the test suite send.

pub mod fuzz;
