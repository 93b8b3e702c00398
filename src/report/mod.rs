//! Turning stored experiments into text for people.

pub mod perfstat;
