//! Experiment ids that are never handed out twice (`id_high_water`, migration 11).

/// Migration 11: the highest experiment id ever handed out, so that an id quoted in a mail never
/// names other data after `delete` (SQLite reuses the largest rowid once its row is gone).
pub(super) const ID_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS id_high_water (
        name  TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    );
    INSERT OR IGNORE INTO id_high_water (name, value)
        SELECT 'experiment', coalesce(max(id), 0) FROM experiment;
    CREATE TRIGGER IF NOT EXISTS experiment_id_high_water AFTER INSERT ON experiment BEGIN
        UPDATE id_high_water SET value = max(value, NEW.id) WHERE name = 'experiment';
    END;
";

/// The id the next experiment gets: above every id that ever existed.
pub(super) const NEXT_EXPERIMENT_ID: &str = "
    SELECT max(coalesce((SELECT max(id) FROM experiment), 0),
               coalesce((SELECT value FROM id_high_water WHERE name = 'experiment'), 0)) + 1";
