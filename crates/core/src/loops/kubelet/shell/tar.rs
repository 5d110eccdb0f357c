//! `tar`, as `kubectl cp` runs it in a container: `tar cf - PATH…` writes a ustar archive
//! of files and directories to stdout (paths relative, the leading `/` removed, as tar
//! says), `tar xf - [-C DIR]` (`-xmf`) extracts one read from stdin, `tar tf -` lists it.

use super::applets::{bytes_text, text_bytes};
use super::{Flow, Host, Process};
use crate::foundation::sort::Sort;

const BLOCK: usize = 512;

/// Run `tar` with its arguments.
pub fn tar(p: &mut Process, host: &mut dyn Host, args: &[String]) -> Flow {
    let gnu = p.flavour.gnu();
    // The first word's letters may come without a dash (`tar cf -`).
    let mut words: Vec<String> = args.to_vec();
    if let Some(first) = words.first_mut() {
        if !first.starts_with('-') {
            first.insert(0, '-');
        }
    }
    let (mut mode, mut file, mut dir) = (None, None::<String>, None::<String>);
    let mut paths = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].clone();
        if w == "-C" || w == "--directory" {
            i += 1;
            dir = words.get(i).cloned();
        } else if let Some(d) = w.strip_prefix("--directory=") {
            dir = Some(d.to_string());
        } else if w.starts_with('-') && w.len() > 1 && !w.starts_with("--") {
            for c in w[1..].chars() {
                match c {
                    'c' | 'x' | 't' => mode = Some(c),
                    'f' => {
                        i += 1;
                        file = words.get(i).cloned();
                    }
                    'm' | 'v' | 'o' | 'p' => {}
                    other => {
                        p.err(&format!("tar: invalid option -- '{other}'\n"), host);
                        return Flow::Status(2);
                    }
                }
            }
        } else {
            paths.push(w);
        }
        i += 1;
    }
    if file.as_deref().is_some_and(|f| f != "-") {
        p.err("tar: kubeloop's tar reads and writes its archive on stdin and stdout (f -)\n", host);
        return Flow::Status(2);
    }
    let base = dir.map(|d| p.abs(&d)).unwrap_or_else(|| p.abs("."));
    match mode {
        Some('c') => {
            if paths.is_empty() {
                let msg = if gnu { "tar: Cowardly refusing to create an empty archive\n" } else { "tar: empty archive\n" };
                p.err(msg, host);
                return Flow::Status(2);
            }
            let mut archive = Vec::new();
            let mut status = 0;
            let mut said_slash = false;
            for path in &paths {
                let full = if path.starts_with('/') { path.clone() } else { format!("{}/{path}", base.trim_end_matches('/')) };
                let name = path.trim_start_matches('/').to_string();
                if path.starts_with('/') && !said_slash {
                    p.err("tar: Removing leading `/' from member names\n", host);
                    said_slash = true;
                }
                if host.kind(&full).is_none() {
                    p.err(&format!("tar: {path}: Cannot stat: No such file or directory\n"), host);
                    status = 2;
                    continue;
                }
                add(host, &full, &name, &mut archive);
            }
            archive.extend(std::iter::repeat_n(0u8, BLOCK * 2));
            p.out(&bytes_text(&archive), host);
            Flow::Status(status)
        }
        Some(m @ ('x' | 't')) => {
            if p.stdin_blocked() {
                return Flow::Wait;
            }
            let data = text_bytes(&p.take_stdin().unwrap_or_default());
            let entries = match read(&data) {
                Ok(e) => e,
                Err(why) => {
                    p.err(&format!("tar: {why}\n"), host);
                    return Flow::Status(2);
                }
            };
            for (name, body) in entries {
                if m == 't' {
                    p.out(&format!("{name}\n"), host);
                    continue;
                }
                let target = format!("{}/{}", base.trim_end_matches('/'), name.trim_start_matches('/').trim_end_matches('/'));
                let ok = match body {
                    None => host.mkdir(&target, true).is_ok(),
                    Some(b) => {
                        if let Some((parent, _)) = target.rsplit_once('/').filter(|(p, _)| !p.is_empty()) {
                            let _ = host.mkdir(parent, true);
                        }
                        host.write(&target, &bytes_text(&b), false).is_ok()
                    }
                };
                if !ok {
                    p.err(&format!("tar: {name}: Cannot open: No such file or directory\n"), host);
                    return Flow::Status(2);
                }
            }
            Flow::Status(0)
        }
        _ => {
            let msg = if gnu {
                "tar: You must specify one of the '-Acdtrux', '--delete' or '--test-label' options\n"
            } else {
                "tar: need exactly one of 'c', 'x' or 't'\n"
            };
            p.err(msg, host);
            Flow::Status(2)
        }
    }
}

/// A file, or a directory and everything under it, as ustar entries named from `name`.
fn add(host: &dyn Host, full: &str, name: &str, archive: &mut Vec<u8>) {
    match host.kind(full) {
        Some(true) => {
            archive.extend(header(&format!("{}/", name.trim_end_matches('/')), 0, b'5', 0o755));
            let mut children = host.list(full).unwrap_or_default();
            children.sort_stable();
            for (child, _) in children {
                add(host, &format!("{}/{child}", full.trim_end_matches('/')), &format!("{}/{child}", name.trim_end_matches('/')), archive);
            }
        }
        Some(false) => {
            let body = text_bytes(&host.read(full).unwrap_or_default());
            archive.extend(header(name, body.len(), b'0', 0o644));
            archive.extend_from_slice(&body);
            archive.extend(std::iter::repeat_n(0u8, (BLOCK - body.len() % BLOCK) % BLOCK));
        }
        None => {}
    }
}

/// A ustar header block.
fn header(name: &str, size: usize, kind: u8, mode: u32) -> Vec<u8> {
    let mut h = vec![0u8; BLOCK];
    let put = |h: &mut Vec<u8>, at: usize, len: usize, s: &[u8]| {
        let n = s.len().min(len);
        h[at..at + n].copy_from_slice(&s[..n]);
    };
    let (prefix, short) = match name.len() {
        0..=100 => ("", name),
        _ => name.rsplit_once('/').filter(|(p, n)| p.len() <= 155 && n.len() <= 100).map_or(("", name), |(p, n)| (p, n)),
    };
    put(&mut h, 0, 100, short.as_bytes());
    put(&mut h, 100, 8, format!("{mode:07o}\0").as_bytes());
    put(&mut h, 108, 8, b"0000000\0");
    put(&mut h, 116, 8, b"0000000\0");
    put(&mut h, 124, 12, format!("{size:011o}\0").as_bytes());
    put(&mut h, 136, 12, b"00000000000\0");
    h[156] = kind;
    put(&mut h, 257, 8, b"ustar\x0000");
    put(&mut h, 265, 32, b"root");
    put(&mut h, 297, 32, b"root");
    put(&mut h, 345, 155, prefix.as_bytes());
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    put(&mut h, 148, 8, format!("{sum:06o}\0 ").as_bytes());
    h
}

/// An archive's entry: its name and its bytes (None for a directory).
pub type Entry = (String, Option<Vec<u8>>);

/// The entries of an archive.
pub fn read(data: &[u8]) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + BLOCK <= data.len() {
        let h = &data[at..at + BLOCK];
        if h.iter().all(|b| *b == 0) {
            break;
        }
        let field = |from: usize, len: usize| String::from_utf8_lossy(&h[from..from + len]).trim_end_matches('\0').trim().to_string();
        let stored: u32 = u32::from_str_radix(field(148, 8).trim_end_matches(' ').trim_end_matches('\0'), 8)
            .map_err(|_| "This does not look like a tar archive".to_string())?;
        let mut sum_block = h.to_vec();
        sum_block[148..156].copy_from_slice(b"        ");
        if sum_block.iter().map(|b| u32::from(*b)).sum::<u32>() != stored {
            return Err("This does not look like a tar archive".into());
        }
        let size = usize::from_str_radix(&field(124, 12), 8).map_err(|_| "Archive contains a bad size".to_string())?;
        let prefix = field(345, 155);
        let short = field(0, 100);
        let name = if prefix.is_empty() { short } else { format!("{prefix}/{short}") };
        at += BLOCK;
        let Some(end) = at.checked_add(size).filter(|e| *e <= data.len()) else {
            return Err("Unexpected EOF in archive".into());
        };
        match h[156] {
            b'5' => out.push((name, None)),
            b'0' | 0 => out.push((name, Some(data[at..end].to_vec()))),
            _ => {}
        }
        at = end.div_ceil(BLOCK) * BLOCK;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back_and_damaged_archives_are_errors() {
        let mut a = header("d/f", 3, b'0', 0o644);
        a.extend(b"hi\n");
        a.extend(std::iter::repeat_n(0u8, BLOCK - 3 + 2 * BLOCK));
        assert_eq!(read(&a), Ok(vec![("d/f".to_string(), Some(b"hi\n".to_vec()))]));
        // Not an archive, a checksum that does not match, a size past the end, a size that
        // does not fit: errors, never a panic.
        assert!(read(&[0xff; 1024]).is_err());
        let mut bad = a.clone();
        bad[0] = b'x';
        assert!(read(&bad).is_err());
        for size in ["00000001000", "77777777777"] {
            let mut big = header("f", 0, b'0', 0o644);
            big[124..135].copy_from_slice(size.as_bytes());
            big[148..156].copy_from_slice(b"        ");
            let sum: u32 = big.iter().map(|b| u32::from(*b)).sum();
            big[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
            assert_eq!(read(&big), Err("Unexpected EOF in archive".to_string()), "{size}");
        }
        assert_eq!(read(&[]), Ok(vec![]));
    }
}
