//! Experiment ids that are never handed out twice (`id_high_water`, migration 11).

/// The id the next experiment gets: above every id that ever existed.
pub(super) const NEXT_EXPERIMENT_ID: &str = "
    SELECT max(coalesce((SELECT max(id) FROM experiment), 0),
               coalesce((SELECT value FROM id_high_water WHERE name = 'experiment'), 0)) + 1";
