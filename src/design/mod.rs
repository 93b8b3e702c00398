//! The design of an experiment: which variants exist (commands, `-L` parameters, knobs) and in
//! which order their runs are made (seeded ABBA, random or sequential).

pub mod placeholders;
pub mod schedule;
pub mod variants;

pub use schedule::{Order, build_schedule};
pub use variants::{
    KnobSpec, ParamList, VariantPlan, build_variants, parse_knob, parse_param_list, substitute,
};
