//! The DDL of every migration after the first, by the feature that owns its tables (the SQL
//! text exactly as it shipped: never edit one; append a new migration instead).

/// Migration 2: the trace tables.
pub(crate) const TRACE: &str = "
CREATE TABLE IF NOT EXISTS trace_capture (
    experiment_id INTEGER PRIMARY KEY REFERENCES experiment(id) ON DELETE CASCADE,
    source        TEXT NOT NULL,            -- record | import
    events        TEXT NOT NULL,            -- JSON list of event names
    clock         TEXT NOT NULL,            -- x86-tsc, mono, ... (ticks are cycles or ns)
    tsc_hz        REAL,
    wall_ns       INTEGER,
    span_ticks    INTEGER NOT NULL,
    event_count   INTEGER NOT NULL,
    lost_total    INTEGER NOT NULL,
    lost          TEXT NOT NULL,            -- JSON list of {cpu, stats, counted, flagged}
    command       TEXT NOT NULL,            -- JSON argv
    raw_path      TEXT,                     -- --keep-raw file, for re-analysis
    text_path     TEXT,                     -- imported text file
    skipped_lines INTEGER NOT NULL,
    exit_code     INTEGER,
    bias_ticks    INTEGER,
    event_counts  TEXT NOT NULL             -- JSON list of [name, count]
);
CREATE TABLE IF NOT EXISTS trace_table (
    experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    kind          TEXT NOT NULL,            -- tlb | pair | count
    name          TEXT NOT NULL,
    meta          TEXT NOT NULL,            -- JSON: reasons / begin, end, key, unmatched / names
    PRIMARY KEY (experiment_id, seq)
);
CREATE TABLE IF NOT EXISTS trace_bin (
    experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
    table_seq     INTEGER NOT NULL,
    grp           INTEGER NOT NULL,         -- tlb: reason; else 0
    key           INTEGER NOT NULL,         -- tlb: pages (-1 full); pair/count: key value
    count         INTEGER NOT NULL,
    timed         INTEGER NOT NULL,
    sum_ticks     INTEGER NOT NULL,
    min_ticks     INTEGER NOT NULL,
    max_ticks     INTEGER NOT NULL,
    inner         TEXT                      -- pair: JSON [[pages, count]] of flushes inside
);
CREATE INDEX IF NOT EXISTS trace_bin_table ON trace_bin(experiment_id, table_seq);
";

/// Migration 6: every duration of a bin (so medians and percentiles can be shown), whose
/// events a capture holds, what stopped it, the per-event tracing cost, and that cost as
/// measured once per machine.
pub(crate) const TRACE_ROBUST: &str = "
ALTER TABLE trace_bin ADD COLUMN dist BLOB;     -- Dist::encode: sorted durations or a sketch
ALTER TABLE trace_capture ADD COLUMN scope TEXT;        -- JSON Scope
ALTER TABLE trace_capture ADD COLUMN stop TEXT;         -- what ended the recording
ALTER TABLE trace_capture ADD COLUMN event_cost TEXT;   -- JSON EventCost used in the header
ALTER TABLE trace_capture ADD COLUMN cpu_ns INTEGER;    -- the workload's user + system time
CREATE TABLE IF NOT EXISTS trace_event_cost (
    machine       TEXT PRIMARY KEY,         -- host, kernel release, CPU model
    ns_per_event  REAL NOT NULL,
    low           REAL NOT NULL,
    high          REAL NOT NULL,
    how           TEXT NOT NULL
);
";

/// Migration 3: where imported runs came from, and per-variant figures a tool reports only as
/// means.
pub(crate) const IMPORT: &str = "
        CREATE TABLE IF NOT EXISTS import_run (
            run_id     INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
            format     TEXT NOT NULL,           -- time | perf-stat | hyperfine
            file       TEXT NOT NULL,
            line       INTEGER NOT NULL,        -- 1-based line where the run's record starts
            summary    INTEGER NOT NULL,        -- 1: the row is a mean over repeats
            repeats    INTEGER                  -- how many, when the input says
        );
        CREATE TABLE IF NOT EXISTS import_variant_summary (
            variant_id INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
            name       TEXT NOT NULL,           -- user_ns_mean, sys_ns_mean
            value      REAL NOT NULL,
            unit       TEXT NOT NULL,
            PRIMARY KEY (variant_id, name)
        );";

/// Migration 4: what `abperf micro` concluded (knee, implied ceiling, skipped benchmarks).
pub(crate) const MICRO: &str = "
    CREATE TABLE IF NOT EXISTS micro_finding (
        experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        position      INTEGER NOT NULL,
        bench         TEXT NOT NULL,
        key           TEXT NOT NULL,
        value         REAL,
        unit          TEXT NOT NULL,
        text          TEXT NOT NULL,
        PRIMARY KEY (experiment_id, position)
    );
";

/// Migration `micro_round`: a micro configuration's samples, one row per round. `cycles` holds
/// the round's samples (counter ticks per operation, timer overhead subtracted) as
/// little-endian IEEE 754 doubles, 8 bytes each; the probe of the core at the round's start is
/// kept beside them. A `--quick` suite stores about 15,000 rows (1.2 MB) here instead of 46,000
/// runs with 170,000 metric rows (34-40 MB).
pub(crate) const MICRO_ROUNDS: &str = "
    CREATE TABLE IF NOT EXISTS micro_round (
        variant_id           INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
        round                INTEGER NOT NULL,
        started_ns           INTEGER NOT NULL,
        ticks_per_core_cycle REAL NOT NULL,
        adds_per_cycle       REAL,
        cycles               BLOB NOT NULL,
        PRIMARY KEY (variant_id, round)
    ) WITHOUT ROWID;
";

/// Migration `micro_round.invocation`: the process each round was measured in (`abperf micro
/// --invocations N`); 0 for every round stored before, all measured in one process.
pub(crate) const MICRO_INVOCATION: &str = "
    ALTER TABLE micro_round ADD COLUMN invocation INTEGER NOT NULL DEFAULT 0;
";

/// Migration 5: the tune tables.
pub(crate) const TUNE: &str = "
        CREATE TABLE IF NOT EXISTS tune_session (
            id            INTEGER PRIMARY KEY,
            source        TEXT NOT NULL,        -- 'doctor --fix' | 'run --tune'
            experiment_id INTEGER,              -- the experiment of a run --tune (no FK: rows
                                                -- must outlive a deleted experiment until restored)
            created       TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS tune_setting (
            id            INTEGER PRIMARY KEY,
            session_id    INTEGER NOT NULL REFERENCES tune_session(id),
            path          TEXT NOT NULL,
            original      TEXT NOT NULL,        -- what the file selected before abperf wrote it
            value         TEXT NOT NULL,        -- what abperf wrote
            state         TEXT NOT NULL,        -- pending | applied | failed | restored
            changed       TEXT NOT NULL,
            restored      TEXT
        );
        ";

pub(crate) const BOOTS: &str = "
        ALTER TABLE variant ADD COLUMN boot TEXT;     -- JSON BootConfig of a kernel variant
        CREATE TABLE boot_plan (
            experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
            number        INTEGER NOT NULL,         -- position in the boot order, from 0
            variant_id    INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
            block         INTEGER NOT NULL,         -- ABBA block of boots
            first_seq     INTEGER NOT NULL,         -- its schedule slots, warm-ups first
            last_seq      INTEGER NOT NULL,
            PRIMARY KEY (experiment_id, number)
        );
        CREATE TABLE boot (
            id            INTEGER PRIMARY KEY,
            experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
            number        INTEGER NOT NULL,         -- order the boots happened in, from 0
            plan          INTEGER NOT NULL,         -- boot_plan.number it ran
            started       TEXT NOT NULL,            -- UTC, RFC 3339
            status        TEXT NOT NULL,            -- starting | running | complete | failed | interrupted | lost
            accel         TEXT NOT NULL,            -- kvm | tcg
            release       TEXT,                     -- uname -r inside
            cmdline       TEXT,                     -- /proc/cmdline inside
            boot_seconds  REAL,                     -- QEMU start to the guest's command
            seconds       REAL,                     -- QEMU start to QEMU end
            run_seconds   REAL,                     -- host seconds of its timed runs
            extra_warmups INTEGER NOT NULL DEFAULT 0,
            environment   TEXT NOT NULL,            -- JSON: boot record and guest snapshot
            outcome       TEXT,                     -- how the VM ended, in words
            UNIQUE (experiment_id, number)
        );
        CREATE TABLE boot_run (
            run_id        INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
            boot_id       INTEGER NOT NULL REFERENCES boot(id) ON DELETE CASCADE
        );
        CREATE INDEX boot_run_boot ON boot_run(boot_id);";

/// Migration 10: the process that runs (or ran) each `abperf run` experiment.
pub(crate) const OWNER: &str = "
    CREATE TABLE IF NOT EXISTS experiment_owner (
        experiment_id INTEGER PRIMARY KEY REFERENCES experiment(id) ON DELETE CASCADE,
        pid           INTEGER NOT NULL,
        start_time    INTEGER NOT NULL,     -- clock ticks after boot (/proc/PID/stat field 22)
        boot_id       TEXT NOT NULL,        -- /proc/sys/kernel/random/boot_id
        host          TEXT NOT NULL,
        since         TEXT NOT NULL         -- UTC, RFC 3339
    );
";

/// Migration 11: the highest experiment id ever handed out, so that an id quoted in a mail never
/// names other data after `delete` (SQLite reuses the largest rowid once its row is gone).
pub(crate) const EXPERIMENT_IDS: &str = "
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

/// Migration 12: the compact tables, created beside the old ones; `convert` fills them, drops the
/// old ones and gives the new ones their names.
pub(crate) const RUNS_COMPACT: &str = "
    CREATE TABLE run_compact (
        id            INTEGER PRIMARY KEY,      -- kept from before (import_run, boot_run)
        experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        seq           INTEGER NOT NULL,
        variant       INTEGER NOT NULL,         -- variant.position
        warmup        INTEGER NOT NULL,
        status        NOT NULL,                 -- 0 ok | 1 failed | 2 timeout, else the word
        exit_code     INTEGER,
        signal        INTEGER,
        started_ns    INTEGER NOT NULL,         -- CLOCK_REALTIME, ns since the epoch
        duration_ns   INTEGER NOT NULL,         -- ended_ns - started_ns (wrapping)
        excluded      TEXT,                     -- reason, when a user excluded the run
        -- The fixed metrics (run_rows::FIXED), NULL when the run has none in this place. No type
        -- (no conversion): an integral value is an INTEGER (1-8 bytes by size), any other a REAL.
        -- (A REAL column would do that too, but not in a table with an index: 8 bytes each.)
        wall_ns, user_ns, sys_ns, maxrss_kib, minflt, majflt, nvcsw, nivcsw, inblock, oublock,
        UNIQUE (experiment_id, seq)
    );
    CREATE TABLE metric_name (
        id            INTEGER PRIMARY KEY,
        name          TEXT NOT NULL,
        unit          TEXT NOT NULL,
        direction     TEXT NOT NULL,            -- declared direction, '' when derived
        UNIQUE (name, unit, direction)
    );
    CREATE TABLE metric_compact (
        run_id        INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
        pos           INTEGER NOT NULL,         -- place in the run's metric list, from 0
        name_id       INTEGER NOT NULL REFERENCES metric_name(id),
        value         NOT NULL,                 -- INTEGER when integral, else REAL (as above)
        PRIMARY KEY (run_id, pos)
    ) WITHOUT ROWID;
    -- The schedule keyed by its primary key alone (no rowid and a second index beside it).
    CREATE TABLE slot_compact (
        experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        seq           INTEGER NOT NULL,         -- position in the schedule, from 0
        variant_id    INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
        block         INTEGER NOT NULL,         -- ABBA block number (-1 for warm-ups)
        warmup        INTEGER NOT NULL,
        PRIMARY KEY (experiment_id, seq)
    ) WITHOUT ROWID;
    INSERT INTO slot_compact (experiment_id, seq, variant_id, block, warmup)
        SELECT experiment_id, seq, variant_id, block, warmup FROM slot;
    DROP TABLE slot;
    ALTER TABLE slot_compact RENAME TO slot;
";

/// Migration 13.
pub(crate) const RUN_LABELS: &str = "
    CREATE TABLE run_label (
        run_id        INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
        invocation    TEXT,                     -- the process that made the run
        boot          TEXT,                     -- the boot it ran in
        host          TEXT                      -- the machine
    );";

/// Migration 15.
pub(crate) const FLEET: &str = "
    CREATE TABLE fleet_host (
        experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        pos           INTEGER NOT NULL,         -- the host's place in the plan
        name          TEXT NOT NULL,            -- its name in the inventory
        first_seq     INTEGER NOT NULL,         -- its slots: first_seq <= seq < end_seq
        end_seq       INTEGER NOT NULL,
        abperf        TEXT,                     -- the version its abperf said hello with
        environment   TEXT,                     -- JSON: its machine snapshot (from its hello)
        PRIMARY KEY (experiment_id, pos),
        UNIQUE (experiment_id, name)
    );";

/// Migration 16: profiled runs (issue 44), one row per run sampled under `perf record`: its
/// variant, its place among the experiment's profiled runs, the event, the sample count, the
/// wall time the profiled run took with perf (its cost), and the kept symbols' shares as a JSON
/// array of `[symbol, self share, inclusive share]` (the top symbols; `other_self` is the self
/// share of the rest). Never read as timed runs.
pub(crate) const PROFILE: &str = "
    CREATE TABLE profile (
        experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        variant_id    INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
        seq           INTEGER NOT NULL,         -- from 0, in the order they ran
        event         TEXT NOT NULL,            -- cpu-clock | cycles | ...
        samples       INTEGER NOT NULL,
        wall_ns       INTEGER NOT NULL,         -- the profiled run under perf, perf included
        other_self    REAL NOT NULL,
        symbols       TEXT NOT NULL,            -- JSON [[symbol, self, inclusive], ...]
        PRIMARY KEY (experiment_id, seq)
    );";

/// Migration 18: what each kernel variant's kernel was made from (issue 41), one row per
/// variant: the base revision, the tree id of the source built, the patches on top (JSON
/// `[{subject, id}]`), the final .config and its hash, the compiler, and the hashes of the image
/// and modules it boots. Only the image hash is always known (a prebuilt image or a Debian
/// package has nothing else).
pub(crate) const KERNEL_PROVENANCE: &str = "
    CREATE TABLE kernel_provenance (
        variant_id     INTEGER PRIMARY KEY REFERENCES variant(id) ON DELETE CASCADE,
        revision       TEXT,                    -- base commit id
        tree_id        TEXT,                    -- git tree id of the patched source
        patches        TEXT NOT NULL,           -- JSON [{subject, id}, ...], [] for none
        config_sha256  TEXT,
        config         TEXT,                    -- the final .config
        compiler       TEXT,                    -- the compiler's version line
        image_sha256   TEXT NOT NULL,
        modules_sha256 TEXT                     -- over every file's path and content
    );";

/// Migration 19: each profiled run's call stacks for the flame graph (issue 44): a JSON object
/// `{"stacks": [["root;caller;callee", samples], ...], "other": samples}` holding the top 200
/// collapsed stacks and the samples of the rest; NULL for runs stored before it.
pub(crate) const PROFILE_STACKS: &str = "
    ALTER TABLE profile ADD COLUMN stacks TEXT;
    ";
