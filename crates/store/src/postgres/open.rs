//! A PostgreSQL store opened for a purpose: what its working copy holds, and which connections
//! it keeps to the server ([`Server`], one mode per purpose, so no other combination exists).

use super::lazy::Lazy;
use super::runs::Remote;
use crate::backend::{Operation, Purpose};
use crate::{Backend, Location, Store};
use anyhow::Context;
use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// The server behind a working copy.
pub(crate) enum Server {
    /// Read as the command reads it (reading commands, `store copy` FROM): every experiment's
    /// row, an experiment's content when first read (`lazy`).
    Reading(RefCell<Lazy>),
    /// Written (`run`, `fleet run`, a fleet host): the working copy holds only what this process
    /// wrote or was given, every write going to the server first (`commit`).
    Writing(Box<Remote>),
    /// Read and written (`--resume`, `import --experiment`, `delete`): read as [`Server::Reading`]
    /// reads it, written as [`Server::Writing`] writes.
    TakingOver(RefCell<Lazy>, Box<Remote>),
}

impl Server {
    /// What is read from the server as the command reads it.
    pub(crate) fn lazy(&self) -> Option<&RefCell<Lazy>> {
        match self {
            Server::Reading(lazy) | Server::TakingOver(lazy, _) => Some(lazy),
            Server::Writing(_) => None,
        }
    }

    /// The connection the writes go through.
    pub(crate) fn remote(&mut self) -> Option<&mut Remote> {
        match self {
            Server::Writing(remote) | Server::TakingOver(_, remote) => Some(remote),
            Server::Reading(_) => None,
        }
    }

    /// Where fleet hosts commit their runs themselves: a server this process writes.
    pub(crate) fn location_for_hosts(&self) -> Option<Location> {
        match self {
            Server::Writing(remote) | Server::TakingOver(_, remote) => {
                Some(Location::Server(remote.dsn().to_string()))
            }
            Server::Reading(_) => None,
        }
    }
}

/// The PostgreSQL store `dsn` opened for `purpose`.
pub(crate) fn open(dsn: &str, purpose: Purpose) -> anyhow::Result<Store> {
    match purpose {
        Purpose::Read | Purpose::ReadOnly => {
            let (store, lazy) = super::load::load(dsn)?;
            Ok(with(store, Server::Reading(lazy.into())))
        }
        Purpose::Write => {
            Err(Operation::Write.refused("PostgreSQL", &crate::redact::redacted(dsn)))
        }
        Purpose::Run => {
            let remote = Remote::open(dsn)?;
            let mut store = Store::open_file(Path::new(":memory:"))?;
            store.path = PathBuf::from(remote.shown());
            Ok(with(store, Server::Writing(Box::new(remote))))
        }
        Purpose::TakeOver => {
            let remote = Remote::open(dsn)?;
            let (store, lazy) = super::load::load(dsn)?;
            Ok(with(
                store,
                Server::TakingOver(lazy.into(), Box::new(remote)),
            ))
        }
        Purpose::AddRuns(id) => {
            let mut remote = Remote::open(dsn)?;
            let content = remote
                .read_content(id)
                .with_context(|| format!("reading experiment {id} of {}", remote.shown()))?;
            let mut store = Store::open_file(Path::new(":memory:"))?;
            store.write_running_keeping_ids(&content)?;
            store.path = PathBuf::from(remote.shown());
            Ok(with(store, Server::Writing(Box::new(remote))))
        }
    }
}

/// `store` (a working copy) backed by `server`.
fn with(mut store: Store, server: Server) -> Store {
    store.backend = Backend::Postgres(Box::new(server));
    store
}

impl Store {
    /// The server behind this working copy (None: an SQLite store).
    pub(crate) fn server_backend(&self) -> Option<&Server> {
        match &self.backend {
            Backend::Postgres(server) => Some(server),
            Backend::Sqlite => None,
        }
    }

    /// The connection this working copy's writes go through (None: not written to a server).
    pub(crate) fn remote(&mut self) -> Option<&mut Remote> {
        match &mut self.backend {
            Backend::Postgres(server) => server.remote(),
            Backend::Sqlite => None,
        }
    }

    /// The server's name for messages: "the PostgreSQL store DSN".
    pub(crate) fn server(&self) -> String {
        format!("the PostgreSQL store {}", self.path.display())
    }
}
