-- Generated from the migrations in schema.rs (see PREPARED there); do not edit.
CREATE TABLE experiment (
        id            INTEGER PRIMARY KEY,
        name          TEXT NOT NULL,
        kind          TEXT NOT NULL,            -- run | micro | import | trace
        created       TEXT NOT NULL,            -- UTC, RFC 3339
        command_line  TEXT NOT NULL,            -- JSON array: the argv that made it
        design        TEXT NOT NULL,            -- JSON: order, seed, runs, warm-ups, options
        seed          TEXT,                     -- u64 as decimal text (SQLite has no u64)
        environment   TEXT NOT NULL,            -- JSON snapshot of machine and kernel
        status        TEXT NOT NULL,            -- running | complete | interrupted | failed
        notes         TEXT
    , labels TEXT);
CREATE TABLE variant (
        id            INTEGER PRIMARY KEY,
        experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        position      INTEGER NOT NULL,         -- 0 = first variant (default baseline)
        name          TEXT NOT NULL,
        command       TEXT,
        parameters    TEXT NOT NULL,            -- JSON object NAME -> value
        knobs         TEXT NOT NULL, boot TEXT, workload TEXT,            -- JSON list of {path, value, original}
        UNIQUE (experiment_id, position),
        UNIQUE (experiment_id, name)
    );
CREATE TABLE trace_capture (
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
, scope TEXT, stop TEXT, event_cost TEXT, cpu_ns INTEGER);
CREATE TABLE trace_table (
    experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    kind          TEXT NOT NULL,            -- tlb | pair | count
    name          TEXT NOT NULL,
    meta          TEXT NOT NULL,            -- JSON: reasons / begin, end, key, unmatched / names
    PRIMARY KEY (experiment_id, seq)
);
CREATE TABLE trace_bin (
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
, dist BLOB);
CREATE TABLE import_run (
            run_id     INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
            format     TEXT NOT NULL,           -- time | perf-stat | hyperfine
            file       TEXT NOT NULL,
            line       INTEGER NOT NULL,        -- 1-based line where the run's record starts
            summary    INTEGER NOT NULL,        -- 1: the row is a mean over repeats
            repeats    INTEGER                  -- how many, when the input says
        );
CREATE TABLE import_variant_summary (
            variant_id INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
            name       TEXT NOT NULL,           -- user_ns_mean, sys_ns_mean
            value      REAL NOT NULL,
            unit       TEXT NOT NULL,
            PRIMARY KEY (variant_id, name)
        );
CREATE TABLE micro_finding (
        experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        position      INTEGER NOT NULL,
        bench         TEXT NOT NULL,
        key           TEXT NOT NULL,
        value         REAL,
        unit          TEXT NOT NULL,
        text          TEXT NOT NULL,
        PRIMARY KEY (experiment_id, position)
    );
CREATE TABLE tune_session (
            id            INTEGER PRIMARY KEY,
            source        TEXT NOT NULL,        -- 'doctor --fix' | 'run --tune'
            experiment_id INTEGER,              -- the experiment of a run --tune (no FK: rows
                                                -- must outlive a deleted experiment until restored)
            created       TEXT NOT NULL
        );
CREATE TABLE tune_setting (
            id            INTEGER PRIMARY KEY,
            session_id    INTEGER NOT NULL REFERENCES tune_session(id),
            path          TEXT NOT NULL,
            original      TEXT NOT NULL,        -- what the file selected before abperf wrote it
            value         TEXT NOT NULL,        -- what abperf wrote
            state         TEXT NOT NULL,        -- pending | applied | failed | restored
            changed       TEXT NOT NULL,
            restored      TEXT
        );
CREATE TABLE trace_event_cost (
    machine       TEXT PRIMARY KEY,         -- host, kernel release, CPU model
    ns_per_event  REAL NOT NULL,
    low           REAL NOT NULL,
    high          REAL NOT NULL,
    how           TEXT NOT NULL
);
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
CREATE TABLE micro_round (
        variant_id           INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
        round                INTEGER NOT NULL,
        started_ns           INTEGER NOT NULL,
        ticks_per_core_cycle REAL NOT NULL,
        adds_per_cycle       REAL,
        cycles               BLOB NOT NULL, invocation INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (variant_id, round)
    ) WITHOUT ROWID;
CREATE TABLE experiment_owner (
        experiment_id INTEGER PRIMARY KEY REFERENCES experiment(id) ON DELETE CASCADE,
        pid           INTEGER NOT NULL,
        start_time    INTEGER NOT NULL,     -- clock ticks after boot (/proc/PID/stat field 22)
        boot_id       TEXT NOT NULL,        -- /proc/sys/kernel/random/boot_id
        host          TEXT NOT NULL,
        since         TEXT NOT NULL         -- UTC, RFC 3339
    );
CREATE TABLE id_high_water (
        name  TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    );
CREATE TABLE "run" (
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
CREATE TABLE "metric" (
        run_id        INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
        pos           INTEGER NOT NULL,         -- place in the run's metric list, from 0
        name_id       INTEGER NOT NULL REFERENCES metric_name(id),
        value         NOT NULL,                 -- INTEGER when integral, else REAL (as above)
        PRIMARY KEY (run_id, pos)
    ) WITHOUT ROWID;
CREATE TABLE "slot" (
        experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        seq           INTEGER NOT NULL,         -- position in the schedule, from 0
        variant_id    INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
        block         INTEGER NOT NULL,         -- ABBA block number (-1 for warm-ups)
        warmup        INTEGER NOT NULL,
        PRIMARY KEY (experiment_id, seq)
    ) WITHOUT ROWID;
CREATE TABLE run_label (
        run_id        INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
        invocation    TEXT,                     -- the process that made the run
        boot          TEXT,                     -- the boot it ran in
        host          TEXT                      -- the machine
    );
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
    );
CREATE TABLE profile (
        experiment_id INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        variant_id    INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
        seq           INTEGER NOT NULL,         -- from 0, in the order they ran
        event         TEXT NOT NULL,            -- cpu-clock | cycles | ...
        samples       INTEGER NOT NULL,
        wall_ns       INTEGER NOT NULL,         -- the profiled run under perf, perf included
        other_self    REAL NOT NULL,
        symbols       TEXT NOT NULL, stacks TEXT,            -- JSON [[symbol, self, inclusive], ...]
        PRIMARY KEY (experiment_id, seq)
    );
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
    );
CREATE INDEX trace_bin_table ON trace_bin(experiment_id, table_seq);
CREATE INDEX boot_run_boot ON boot_run(boot_id);
CREATE TRIGGER experiment_id_high_water AFTER INSERT ON experiment BEGIN
        UPDATE id_high_water SET value = max(value, NEW.id) WHERE name = 'experiment';
    END;
INSERT INTO id_high_water (name, value) VALUES ('experiment', 0);
