//! The owner of an experiment in PostgreSQL, through the store's own methods: written with the
//! experiment, read by another process, and replaced by a take-over only when the experiment is
//! not running or its owner is dead; the server decides, not a working copy read before.

use super::common::postgres::Server;
use abperf::model::{Kind, NewExperiment, Owner, Status, Variant};
use abperf::store::Store;

fn owner(pid: i32) -> Owner {
    Owner {
        pid,
        start_time: u64::MAX >> 1,
        boot_id: "boot".into(),
        host: "h".into(),
    }
}

#[test]
fn the_owner_is_stored_with_the_experiment_and_a_take_over_respects_the_living() {
    let Some(pg) = Server::start() else { return };
    let dsn = pg.create_db("abperf");
    let at = &abperf::store::Location::parse(&dsn);
    let exp = NewExperiment {
        name: "o".into(),
        kind: Kind::Run,
        command_line: vec![],
        design: serde_json::json!({}),
        seed: None,
        environment: serde_json::json!({}),
    };
    let mut first = Store::open_to_run(at).unwrap();
    let variants = [Variant::named("a")];
    let id = first
        .create_owned_experiment(&exp, &variants, &[], &owner(1), &|| false)
        .unwrap()
        .unwrap();
    assert_eq!(first.owner(id).unwrap(), Some(owner(1)));
    let there = || pg.psql("abperf", "SELECT pid, start_time FROM experiment_owner");
    assert_eq!(there(), format!("1|{}", u64::MAX >> 1));
    // Another process reads it, and may take the experiment over only from a dead owner.
    let mut second = Store::open_to_take_over(at).unwrap();
    assert_eq!(second.owners().unwrap()[&id], owner(1));
    let refused = second.claim_experiment(id, &owner(2), &|_| true).unwrap();
    assert_eq!(refused, Err(owner(1)));
    let taken = second.claim_experiment(id, &owner(2), &|_| false).unwrap();
    assert_eq!(taken, Ok(()));
    assert_eq!(second.owner(id).unwrap(), Some(owner(2)));
    // The first one's working copy still says owner 1: the server's owner 2 is the one judged.
    let judged = std::cell::RefCell::new(Vec::new());
    let alive = |o: &Owner| {
        judged.borrow_mut().push(o.pid);
        true
    };
    let refused = first.claim_experiment(id, &owner(3), &alive).unwrap();
    assert_eq!(refused, Err(owner(2)));
    assert_eq!(judged.into_inner(), [2]);
    // A stopped experiment is resumed whoever ran it.
    second.set_status(id, Status::Interrupted).unwrap();
    let resumed = first.claim_experiment(id, &owner(3), &|_| true).unwrap();
    assert_eq!(resumed, Ok(()));
    assert_eq!(there(), format!("3|{}", u64::MAX >> 1));
    let status = pg.psql("abperf", "SELECT status FROM experiment");
    assert_eq!(status, "running");
    // No such experiment: an error naming it and the store.
    let missing = first.claim_experiment(id + 1, &owner(4), &|_| false);
    let why = format!("{:#}", missing.unwrap_err());
    assert!(why.contains(&format!("no experiment {}", id + 1)), "{why}");
    assert!(why.contains(&dsn), "{why}");
}
