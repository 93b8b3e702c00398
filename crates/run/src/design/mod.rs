//! The design of an experiment: which variants exist (commands, `-L` parameters, knobs) and in
//! which order their runs are made (seeded ABBA, random or sequential).

pub mod boots;
pub mod placeholders;
pub mod provenance;
pub mod schedule;
pub mod trust;
pub mod variants;

pub use boots::{BootVariant, KernelChoice, build_boot_schedule, build_boot_variants};
pub use schedule::{Order, build_schedule};
pub use variants::{
    KnobSpec, ParamList, VariantPlan, build_variants, parse_knob, parse_param_list, substitute,
};
