//! Outlier flags, never removal: Tukey fences (1.5 IQR mild, 3 IQR severe) and the modified
//! z-score 0.6745 * |x - median| / MAD > 3.5 (Iglewicz and Hoaglin, 1993).

use abperf_model::describe::{median_sorted, quantile_sorted, sorted};
use serde::Serialize;

/// Tukey classification of one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Mild,
    Severe,
}

/// One flagged value (index into the input slice).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flag {
    pub index: usize,
    pub value: f64,
    /// Tukey class, `None` when only the modified z-score flags it.
    pub tukey: Option<Severity>,
    /// Modified z-score; `None` when the MAD is 0.
    pub modified_z: Option<f64>,
    pub modified_z_flag: bool,
}

/// Outlier analysis of one sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outliers {
    pub q1: f64,
    pub q3: f64,
    pub iqr: f64,
    pub mad: f64,
    pub flags: Vec<Flag>,
}

impl Outliers {
    pub fn severe_count(&self) -> usize {
        self.flags
            .iter()
            .filter(|f| f.tukey == Some(Severity::Severe))
            .count()
    }
    pub fn mild_count(&self) -> usize {
        self.flags
            .iter()
            .filter(|f| f.tukey == Some(Severity::Mild))
            .count()
    }
    /// Indices Tukey flags as mild or severe.
    pub fn tukey_indices(&self) -> Vec<usize> {
        self.flags
            .iter()
            .filter(|f| f.tukey.is_some())
            .map(|f| f.index)
            .collect()
    }
    /// Indices Tukey flags as severe.
    pub fn severe_indices(&self) -> Vec<usize> {
        self.flags
            .iter()
            .filter(|f| f.tukey == Some(Severity::Severe))
            .map(|f| f.index)
            .collect()
    }
}

/// Threshold of the modified z-score (Iglewicz-Hoaglin).
pub const MODIFIED_Z_LIMIT: f64 = 3.5;

/// Flag outliers in `xs` (quartiles by linear interpolation, as numpy).
pub fn flag(xs: &[f64]) -> Outliers {
    let s = sorted(xs);
    let q1 = quantile_sorted(&s, 0.25);
    let q3 = quantile_sorted(&s, 0.75);
    let iqr = q3 - q1;
    let med = median_sorted(&s);
    let dev = sorted(&xs.iter().map(|x| (x - med).abs()).collect::<Vec<_>>());
    let mad = median_sorted(&dev);
    let mut flags = Vec::new();
    for (index, &x) in xs.iter().enumerate() {
        let dist = if x < q1 {
            q1 - x
        } else if x > q3 {
            x - q3
        } else {
            0.0
        };
        let tukey = if dist > 3.0 * iqr {
            Some(Severity::Severe)
        } else if dist > 1.5 * iqr {
            Some(Severity::Mild)
        } else {
            None
        };
        let modified_z = (mad > 0.0).then(|| 0.6745 * (x - med).abs() / mad);
        let modified_z_flag = modified_z.is_some_and(|z| z > MODIFIED_Z_LIMIT);
        if tukey.is_some() || modified_z_flag {
            flags.push(Flag {
                index,
                value: x,
                tukey,
                modified_z,
                modified_z_flag,
            });
        }
    }
    Outliers {
        q1,
        q3,
        iqr,
        mad,
        flags,
    }
}

/// Copy of `xs` without the given indices.
pub fn without(xs: &[f64], drop: &[usize]) -> Vec<f64> {
    xs.iter()
        .enumerate()
        .filter(|(i, _)| !drop.contains(i))
        .map(|(_, &x)| x)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_mild_and_severe() {
        let mut xs: Vec<f64> = (0..20).map(|i| 100.0 + (i % 5) as f64 * 0.1).collect();
        xs.push(100.9); // mild: q3 = 100.3, iqr = 0.2 -> 1.5 IQR fence 100.6, 3 IQR 100.9
        xs.push(105.0); // severe
        let o = flag(&xs);
        assert_eq!(o.mild_count(), 1);
        assert_eq!(o.severe_count(), 1);
        assert_eq!(o.severe_indices(), vec![21]);
        assert!(o.flags.iter().all(|f| f.modified_z_flag));
        assert_eq!(xs.len(), 22, "flagging never drops");
        assert_eq!(without(&xs, &o.tukey_indices()).len(), 20);
    }

    #[test]
    fn constant_sample_flags_nothing() {
        let o = flag(&[3.0; 8]);
        assert!(o.flags.is_empty());
        assert_eq!(o.mad, 0.0);
    }
}
