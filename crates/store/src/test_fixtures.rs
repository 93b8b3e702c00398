//! Fixtures shared by the unit tests of the store's modules.

use crate::Store;
use abperf_model::{Kind, NewExperiment, Slot, Variant};

/// A run experiment named `name` with variants `a` and `b` and one slot of `b`; its id.
pub fn two_variant_experiment(st: &mut Store, name: &str) -> i64 {
    let exp = NewExperiment {
        name: name.into(),
        kind: Kind::Run,
        command_line: vec!["abperf".into()],
        design: serde_json::json!({}),
        seed: Some(1),
        environment: serde_json::json!({}),
    };
    let slot = Slot {
        seq: 0,
        variant: 1,
        block: 0,
        warmup: false,
    };
    st.create_experiment(&exp, &[Variant::named("a"), Variant::named("b")], &[slot])
        .unwrap()
}
