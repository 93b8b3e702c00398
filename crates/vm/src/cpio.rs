//! A writer for the "newc" cpio format the kernel unpacks as an initramfs
//! (Documentation/driver-api/early-userspace/buffer-format.rst). Enough for directories, regular
//! files and symlinks; archives may be concatenated, and the kernel unpacks them in order.

/// An archive under construction, kept in memory (an initramfs is a few MiB).
pub struct Cpio {
    buf: Vec<u8>,
    ino: u32,
}

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;
const S_IFCHR: u32 = 0o020000;

impl Default for Cpio {
    fn default() -> Self {
        Self::new()
    }
}

impl Cpio {
    pub fn new() -> Cpio {
        Cpio {
            buf: Vec::new(),
            ino: 1,
        }
    }

    /// A directory (parents must have been added before).
    pub fn dir(&mut self, path: &str, perm: u32) {
        self.entry(path, S_IFDIR | perm, 2, b"");
    }

    /// A regular file with `data` as its content.
    pub fn file(&mut self, path: &str, perm: u32, data: &[u8]) {
        self.entry(path, S_IFREG | perm, 1, data);
    }

    /// A symbolic link at `path` pointing to `target`.
    pub fn symlink(&mut self, path: &str, target: &str) {
        self.entry(path, S_IFLNK | 0o777, 1, target.as_bytes());
    }

    /// A character device node (e.g. `/dev/console`, 5:1: the kernel opens it for init's stdio).
    pub fn chardev(&mut self, path: &str, perm: u32, major: u32, minor: u32) {
        let ino = self.next_ino();
        let name = path.trim_start_matches('/');
        self.header(ino, S_IFCHR | perm, 1, 0, (major, minor), name);
    }

    fn next_ino(&mut self) -> u32 {
        self.ino += 1;
        self.ino - 1
    }

    fn entry(&mut self, path: &str, mode: u32, nlink: u32, data: &[u8]) {
        let name = path.trim_start_matches('/');
        let ino = self.next_ino();
        self.header(ino, mode, nlink, data.len(), (0, 0), name);
        self.buf.extend_from_slice(data);
        self.pad();
    }

    fn header(
        &mut self,
        ino: u32,
        mode: u32,
        nlink: u32,
        size: usize,
        rdev: (u32, u32),
        name: &str,
    ) {
        let fields = [
            ino,
            mode,
            0, // uid
            0, // gid
            nlink,
            0, // mtime
            size as u32,
            0, // dev major
            0, // dev minor
            rdev.0,
            rdev.1,
            name.len() as u32 + 1,
            0, // check (unused by "070701")
        ];
        self.buf.extend_from_slice(b"070701");
        for f in fields {
            self.buf.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.push(0);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.buf.len().is_multiple_of(4) {
            self.buf.push(0);
        }
    }

    /// Close the archive with its trailer and return the bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.header(0, 0, 1, 0, (0, 0), "TRAILER!!!");
        // The kernel reads the initramfs in 512-byte blocks' worth of padding without complaint;
        // pad to 512 like cpio(1) so a concatenated archive starts on a clean boundary.
        while !self.buf.len().is_multiple_of(512) {
            self.buf.push(0);
        }
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parse a newc archive back into (name, mode, data) triples.
    fn parse(mut b: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut out = Vec::new();
        let total = b.len();
        loop {
            let off = total - b.len();
            assert_eq!(&b[..6], b"070701", "magic at offset {off}");
            let field = |i: usize| {
                u32::from_str_radix(std::str::from_utf8(&b[6 + 8 * i..14 + 8 * i]).unwrap(), 16)
                    .unwrap()
            };
            let mode = field(1);
            if mode & 0o170000 == S_IFCHR {
                assert_eq!((field(9), field(10)), (5, 1), "rdev of {off}");
            }
            let size = field(6) as usize;
            let namesize = field(11) as usize;
            let name = std::str::from_utf8(&b[110..110 + namesize - 1])
                .unwrap()
                .to_string();
            let data_off = (110 + namesize).div_ceil(4) * 4;
            let data = b[data_off..data_off + size].to_vec();
            let next = (data_off + size).div_ceil(4) * 4;
            b = &b[next..];
            if name == "TRAILER!!!" {
                assert!(b.iter().all(|&x| x == 0), "only padding after the trailer");
                assert_eq!(total % 512, 0);
                return out;
            }
            out.push((name, mode, data));
        }
    }

    #[test]
    fn entries_round_trip_with_alignment() {
        let mut c = Cpio::new();
        c.dir("/bin", 0o755);
        c.file("/bin/x", 0o755, b"abc");
        c.file("init", 0o700, b"#!/bin/sh\n");
        c.symlink("/bin/sh", "busybox");
        c.chardev("/dev/console", 0o600, 5, 1);
        let got = parse(&c.finish());
        assert_eq!(
            got,
            vec![
                ("bin".to_string(), 0o040755, vec![]),
                ("bin/x".to_string(), 0o100755, b"abc".to_vec()),
                ("init".to_string(), 0o100700, b"#!/bin/sh\n".to_vec()),
                ("bin/sh".to_string(), 0o120777, b"busybox".to_vec()),
                ("dev/console".to_string(), 0o020600, vec![]),
            ]
        );
    }
}
