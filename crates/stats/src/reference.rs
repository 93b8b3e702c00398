//! Test helper: reference values computed by scipy (tools/stats_reference.py ->
//! tests/data/stats_reference.json).

use serde_json::Value;

pub struct Reference(Value);

pub struct Case<'a>(&'a Value);

impl Reference {
    pub fn load() -> Reference {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/stats_reference.json"
        );
        let text = std::fs::read_to_string(path).expect("read tests/data/stats_reference.json");
        Reference(serde_json::from_str(&text).expect("parse stats_reference.json"))
    }

    pub fn cases(&self, name: &str) -> Vec<Case<'_>> {
        let v = self.0[name]
            .as_array()
            .unwrap_or_else(|| panic!("reference has no '{name}' cases"));
        assert!(!v.is_empty(), "reference '{name}' is empty");
        v.iter().map(Case).collect()
    }
}

impl Case<'_> {
    pub fn num(&self, key: &str) -> f64 {
        self.0[key]
            .as_f64()
            .unwrap_or_else(|| panic!("case lacks number '{key}': {}", self.0))
    }
    pub fn vec(&self, key: &str) -> Vec<f64> {
        self.0[key]
            .as_array()
            .unwrap_or_else(|| panic!("case lacks array '{key}'"))
            .iter()
            .map(|x| x.as_f64().expect("number"))
            .collect()
    }
    pub fn str(&self, key: &str) -> String {
        self.0[key].as_str().unwrap_or_default().to_string()
    }
}

/// Assert relative agreement (absolute near zero).
pub fn assert_rel(got: f64, want: f64, tol: f64, what: &str) {
    let err = (got - want).abs();
    let scale = want.abs().max(1e-300);
    assert!(
        err <= tol * scale || err <= 1e-14,
        "{what}: got {got:e}, want {want:e}, rel err {:e}",
        err / scale
    );
}

/// A standard normal draw (Box-Muller), for tests that simulate data.
pub fn normal(rng: &mut rand_chacha::ChaCha8Rng) -> f64 {
    use rand::Rng;
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}
