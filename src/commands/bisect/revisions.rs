//! The revisions a bisection has made ready (built worktrees, built kernels), each made once by
//! the bisection's [`Builder`] with a private directory (0700, under the temporary directory,
//! never the user's checkout) for its files; a revision the search has left is let go, and every
//! one, the directory with them, when the bisection ends on any way out (drop).

use super::builder::Builder;
use super::git::Commit;
use std::collections::BTreeMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

/// How a revision's build went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Built<R> {
    /// It is ready.
    Ready(R),
    /// The build failed (why, in words); the revision is skipped.
    Failed(String),
}

pub struct Revisions<B: Builder> {
    dir: PathBuf,
    builder: B,
    made: BTreeMap<usize, B::Ready>,
}

impl<B: Builder> Revisions<B> {
    /// A new private directory for the revisions `builder` makes.
    pub fn new(builder: B) -> anyhow::Result<Revisions<B>> {
        let base = std::env::temp_dir();
        for _ in 0..16 {
            let dir = base.join(format!("abperf-bisect-{:016x}", rand::random::<u64>()));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    return Ok(Revisions {
                        dir,
                        builder,
                        made: BTreeMap::new(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => anyhow::bail!("{}: cannot create it: {e}", dir.display()),
            }
        }
        anyhow::bail!("{}: no free name for a private directory", base.display())
    }

    /// Revision `index` (`commit`), made ready on first use.
    pub fn get(&mut self, index: usize, commit: &Commit) -> anyhow::Result<Built<B::Ready>> {
        if let Some(r) = self.made.get(&index) {
            return Ok(Built::Ready(r.clone()));
        }
        match self.builder.build(commit, &self.dir)? {
            Ok(ready) => {
                self.made.insert(index, ready.clone());
                Ok(Built::Ready(ready))
            }
            Err(why) => Ok(Built::Failed(why)),
        }
    }

    /// Let go of revision `index`, if it is held (a probe the search has left).
    pub fn remove(&mut self, index: usize) {
        if let Some(r) = self.made.remove(&index) {
            self.builder.release(r);
        }
    }

    /// Revisions held now.
    pub fn held(&self) -> Vec<usize> {
        self.made.keys().copied().collect()
    }

    /// The bisection's kind.
    pub fn builder(&self) -> &B {
        &self.builder
    }
}

impl<B: Builder> Drop for Revisions<B> {
    fn drop(&mut self) {
        for i in self.held() {
            self.remove(i);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
