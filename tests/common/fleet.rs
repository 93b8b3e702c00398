//! A fleet of real SSH hosts for `abperf fleet run`: dropbear servers (Debian's dropbear-bin;
//! OpenSSH's server cannot be installed here without upgrading the client) bound to 127.0.0.2,
//! .3 and .4 on free ports, each with its own host key made in a temporary directory, key-only
//! login with a client key made for the test, and an Ansible inventory naming them with a private
//! known_hosts. Dropbear has no option for where authorized_keys is: each server runs in a
//! private mount namespace (`unshare --mount`) in which the user's home directory is a directory
//! of the fleet's own (holding .ssh/authorized_keys), so nothing outside the temporary directory
//! is read or changed (Ansible's remote temporary files land there too). Dropping the [`Fleet`]
//! kills every server it started, by pid, and removes the directory.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where program `name` is: in a directory of `$PATH`, else in /usr/sbin (dropbear's place,
/// which a user's PATH may lack).
pub fn program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Why the fleet tests cannot run here (None: they can): a program they need is missing.
pub fn missing() -> Option<String> {
    let need = [
        "dropbear",
        "dropbearkey",
        "ansible-playbook",
        "ansible-inventory",
        "ssh",
        "ssh-keygen",
        "unshare",
    ];
    let gone: Vec<&str> = need.into_iter().filter(|p| program(p).is_none()).collect();
    (!gone.is_empty()).then(|| {
        format!(
            "the fleet tests need {} (Debian packages dropbear-bin, ansible-core, openssh-client, \
             util-linux)",
            gone.join(", ")
        )
    })
}

/// One dropbear server: its inventory name, address and port, and the running process.
pub struct Host {
    pub name: String,
    pub addr: String,
    pub port: u16,
    key: PathBuf,
    child: Option<Child>,
}

/// The running hosts and their inventory (see the module comment).
pub struct Fleet {
    pub dir: tempfile::TempDir,
    pub hosts: Vec<Host>,
    home: PathBuf,
    user: String,
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A port free on `addr` right now.
fn free_port(addr: &str) -> u16 {
    let l = TcpListener::bind((addr, 0)).unwrap_or_else(|e| panic!("bind {addr}: {e}"));
    l.local_addr().unwrap().port()
}

impl Fleet {
    /// Three hosts, lab-a, lab-b and lab-c, on 127.0.0.2, .3 and .4, all started.
    pub fn start() -> Fleet {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        let client = dir.path().join("client_key");
        run(
            Command::new("ssh-keygen")
                .args([
                    "-q",
                    "-t",
                    "ed25519",
                    "-N",
                    "",
                    "-C",
                    "abperf-fleet-test",
                    "-f",
                ])
                .arg(&client),
            "ssh-keygen",
        );
        std::fs::copy(
            client.with_extension("pub"),
            home.join(".ssh/authorized_keys"),
        )
        .unwrap();
        let user = run(Command::new("id").arg("-un"), "id -un")
            .trim()
            .to_string();
        let mut fleet = Fleet {
            dir,
            hosts: Vec::new(),
            home,
            user,
        };
        let mut known = String::new();
        for (i, name) in ["lab-a", "lab-b", "lab-c"].into_iter().enumerate() {
            let addr = format!("127.0.0.{}", i + 2);
            let key = fleet.dir.path().join(format!("{name}.hostkey"));
            let dropbearkey = program("dropbearkey").expect("dropbearkey (see missing())");
            run(
                Command::new(&dropbearkey)
                    .args(["-t", "ed25519", "-f"])
                    .arg(&key),
                "dropbearkey",
            );
            let public = run(
                Command::new(&dropbearkey).args(["-y", "-f"]).arg(&key),
                "dropbearkey -y",
            );
            let line = public
                .lines()
                .find(|l| l.starts_with("ssh-"))
                .expect("dropbearkey -y prints the public key");
            let port = free_port(&addr);
            known.push_str(&format!("[{addr}]:{port} {line}\n"));
            fleet.hosts.push(Host {
                name: name.into(),
                addr,
                port,
                key,
                child: None,
            });
        }
        std::fs::write(fleet.dir.path().join("known_hosts"), known).unwrap();
        for i in 0..fleet.hosts.len() {
            fleet.start_host(i);
        }
        fleet
    }

    /// The user's home directory as the system names it (where dropbear looks for .ssh).
    fn system_home(&self) -> String {
        let entry = run(
            Command::new("getent").args(["passwd", &self.user]),
            "getent passwd",
        );
        entry
            .trim()
            .split(':')
            .nth(5)
            .expect("a passwd entry has a home directory")
            .to_string()
    }

    fn index(&self, name: &str) -> usize {
        self.hosts
            .iter()
            .position(|h| h.name == name)
            .unwrap_or_else(|| panic!("no host {name} in the fleet"))
    }

    /// (Re)start host `i`'s server on its address and port, and wait until it accepts.
    fn start_host(&mut self, i: usize) {
        let log = self.dir.path().join(format!("{}.log", self.hosts[i].name));
        let pidfile = self.dir.path().join(format!("{}.pid", self.hosts[i].name));
        let real_home = self.system_home();
        let h = &mut self.hosts[i];
        let listen = format!("{}:{}", h.addr, h.port);
        let child = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg(r#"mount --bind "$1" "$2" && exec "$6" -F -E -s -m -r "$3" -p "$4" -P "$5""#)
            .arg("sh")
            .arg(&self.home)
            .arg(&real_home)
            .arg(&h.key)
            .arg(&listen)
            .arg(&pidfile)
            .arg(program("dropbear").expect("dropbear (see missing())"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start dropbear for {}: {e}", h.name));
        h.child = Some(child);
        let sock: SocketAddr = listen.parse().unwrap();
        let t = Instant::now();
        while TcpStream::connect_timeout(&sock, Duration::from_millis(200)).is_err() {
            if let Some(Ok(Some(st))) = h.child.as_mut().map(|c| c.try_wait()) {
                panic!(
                    "dropbear for {} exited ({st}): {}",
                    h.name,
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "dropbear for {} does not listen on {listen}",
                h.name
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stop host `name`'s server: new connections to it are refused.
    pub fn stop(&mut self, name: &str) {
        let i = self.index(name);
        if let Some(mut c) = self.hosts[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Host `name` is lost as a machine is: its server and everything running under it (the
    /// sessions, the abperf they run, its workload) are killed at once (frozen with SIGSTOP
    /// while the tree is walked, so nothing forks away, then SIGKILL).
    pub fn kill_host(&mut self, name: &str) {
        let i = self.index(name);
        let Some(mut c) = self.hosts[i].child.take() else {
            return;
        };
        kill_frozen(&freeze_tree(c.id()));
        let _ = c.wait();
    }

    /// The home directory the hosts see (where abperf keeps its experiment directories).
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Start host `name`'s server again (same address, port and host key).
    pub fn restart(&mut self, name: &str) {
        let i = self.index(name);
        self.stop(name);
        self.start_host(i);
    }

    /// Write an INI inventory of the hosts (all of them in group `lab`, each with its address,
    /// port, user, the client key and the private known_hosts) to the fleet's directory as
    /// `file`; returns its path.
    pub fn inventory(&self, file: &str) -> String {
        let dir = self.dir.path();
        let mut ini = String::from("[lab]\n");
        for h in &self.hosts {
            ini.push_str(&format!(
                "{} ansible_host={} ansible_port={} ansible_user={} \
                 ansible_ssh_private_key_file={}\n",
                h.name,
                h.addr,
                h.port,
                self.user,
                dir.join("client_key").display()
            ));
        }
        ini.push_str(&format!(
            "\n[lab:vars]\nansible_python_interpreter=/usr/bin/python3\nansible_ssh_transfer_method=piped\n\
             ansible_ssh_common_args='-o UserKnownHostsFile={} -o StrictHostKeyChecking=yes \
             -o ConnectTimeout=5'\n",
            dir.join("known_hosts").display()
        ));
        let path = dir.join(file);
        std::fs::write(&path, ini).unwrap();
        path.display().to_string()
    }
}

/// Process `pid` and everything below it frozen with SIGSTOP (walked while freezing, so nothing
/// forks away); returns every process frozen, for [`kill_frozen`], also one that left the tree
/// meanwhile (its parent ended and it went to init): it must not be left stopped.
pub fn freeze_tree(pid: u32) -> Vec<u32> {
    let mut frozen: Vec<u32> = Vec::new();
    for _ in 0..3 {
        let tree = descendants(pid);
        signal(&tree, "STOP");
        for p in tree {
            if !frozen.contains(&p) {
                frozen.push(p);
            }
        }
    }
    frozen
}

/// Processes frozen by [`freeze_tree`] killed at once, as a machine dies (SIGKILL). The caller
/// reaps its own child among them.
pub fn kill_frozen(tree: &[u32]) {
    signal(tree, "KILL");
}

/// `pid` and every process below it, from /proc.
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent: Vec<(u32, u32)> = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so read after its last ')'.
        let after = stat.rsplit_once(')').map_or("", |(_, a)| a);
        if let Some(ppid) = after.split_whitespace().nth(1).and_then(|x| x.parse().ok()) {
            parent.push((p, ppid));
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(parent.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    tree
}

/// Send signal `name` to processes `pids` (kill(1): the test crate has no libc).
fn signal(pids: &[u32], name: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{name}"))
        .args(pids.iter().map(u32::to_string))
        .stderr(Stdio::null())
        .status();
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for h in &mut self.hosts {
            if let Some(mut c) = h.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}
