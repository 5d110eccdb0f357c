//! A container's file system: its writable layer (what the image holds plus what the
//! program wrote, gone when the container restarts) under the pod's volumes mounted at
//! their paths (emptyDir shared by the pod's containers and kept across restarts;
//! ConfigMap, Secret, downward API and projected volumes read-only, holding real contents).

use crate::foundation::sort::CollectTree;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A file's contents, shared until written: the CA bundle of a ConfigMap or an image's web
/// page that every container holds is kept once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Content(Arc<str>);

impl Content {
    /// Contents many containers hold alike (a ConfigMap's or Secret's values, an image's
    /// files): one copy for all of them, found by value, for contents of 64 bytes or more
    /// and up to [`MAX_SHARED`] distinct ones.
    pub fn shared(text: &str) -> Content {
        if text.len() < 64 {
            return Content(text.into());
        }
        thread_local! {
            static POOL: std::cell::RefCell<std::collections::HashSet<Arc<str>>> = Default::default();
        }
        POOL.with(|pool| {
            let mut pool = pool.borrow_mut();
            if let Some(c) = pool.get(text) {
                return Content(c.clone());
            }
            let c: Arc<str> = text.into();
            if pool.len() < MAX_SHARED {
                pool.insert(c.clone());
            }
            Content(c)
        })
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn push_str(&mut self, more: &str) {
        let mut s = String::with_capacity(self.0.len() + more.len());
        s.push_str(&self.0);
        s.push_str(more);
        self.0 = s.into();
    }
}

/// The most distinct contents [`Content::shared`] keeps.
const MAX_SHARED: usize = 1024;

impl std::ops::Deref for Content {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<String> for Content {
    fn from(s: String) -> Content {
        Content(s.into())
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Content {
        Content(s.into())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsError {
    NotFound,
    IsDir,
    NotDir,
    ReadOnly,
    Exists,
    NotEmpty,
}

impl FsError {
    /// strerror(3).
    pub fn text(self) -> &'static str {
        match self {
            FsError::NotFound => "No such file or directory",
            FsError::IsDir => "Is a directory",
            FsError::NotDir => "Not a directory",
            FsError::ReadOnly => "Read-only file system",
            FsError::Exists => "File exists",
            FsError::NotEmpty => "Directory not empty",
        }
    }
}

/// One tree of files: path (absolute within the tree, `/a/b`) to contents, plus the
/// directories made explicitly (a file's parents exist implicitly).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tree {
    pub files: BTreeMap<String, Content>,
    pub dirs: BTreeSet<String>,
    /// The directories every image has (`/tmp`, `/etc`, ...), without storing them per
    /// container.
    pub base: bool,
}

/// The directories of an image's file system that every container has.
pub const BASE_DIRS: &[&str] = &[
    "/bin",
    "/dev",
    "/etc",
    "/home",
    "/proc",
    "/root",
    "/run",
    "/sys",
    "/tmp",
    "/usr",
    "/usr/bin",
    "/usr/local",
    "/usr/local/bin",
    "/var",
    "/var/log",
    "/var/run",
];

impl Tree {
    pub fn with_files<C: Into<Content>, I: IntoIterator<Item = (String, C)>>(files: I) -> Tree {
        Tree { files: files.into_iter().map(|(p, c)| (normalise(&format!("/{p}")), c.into())).collect(), dirs: BTreeSet::new(), base: false }
    }
    fn is_dir(&self, p: &str) -> bool {
        if p == "/" || self.dirs.contains(p) || self.base && BASE_DIRS.contains(&p) {
            return true;
        }
        let prefix = format!("{p}/");
        self.files.range(prefix.clone()..).next().is_some_and(|(k, _)| k.starts_with(&prefix))
            || self.dirs.range(prefix.clone()..).next().is_some_and(|k| k.starts_with(&prefix))
    }
    fn list(&self, p: &str) -> Vec<(String, bool)> {
        let prefix = if p == "/" { "/".to_string() } else { format!("{p}/") };
        let mut out: BTreeMap<String, bool> = BTreeMap::new();
        for k in self.files.range(prefix.clone()..).map(|(k, _)| k).take_while(|k| k.starts_with(&prefix)) {
            let rest = &k[prefix.len()..];
            match rest.split_once('/') {
                Some((d, _)) => out.insert(d.to_string(), true),
                None => out.insert(rest.to_string(), false),
            };
        }
        let base = if self.base { BASE_DIRS } else { &[] };
        for k in self
            .dirs
            .range(prefix.clone()..)
            .take_while(|k| k.starts_with(&prefix))
            .map(String::as_str)
            .chain(base.iter().copied().filter(|d| d.starts_with(&prefix)))
        {
            let rest = &k[prefix.len()..];
            let d = rest.split_once('/').map(|(d, _)| d).unwrap_or(rest);
            if !d.is_empty() {
                out.insert(d.to_string(), true);
            }
        }
        out.into_iter().collect()
    }
    pub fn bytes(&self) -> usize {
        self.files.iter().map(|(k, v)| k.len() + v.len()).sum()
    }
}

/// `a//b/./c/../d` to `/a/b/d`.
pub fn normalise(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

/// A mount: a volume's tree at a path, maybe read-only, maybe a sub-path of the volume.
#[derive(Debug, Clone, PartialEq)]
pub struct Mount {
    pub path: String,
    pub volume: usize,
    pub sub_path: String,
    pub read_only: bool,
}

/// The view one container has: the pod's volumes (by index), its mounts, its own layer.
pub struct View<'a> {
    pub volumes: &'a mut [Tree],
    pub volume_read_only: &'a [bool],
    pub mounts: &'a [Mount],
    pub root: &'a mut Tree,
}

/// The same view, for reading only (another pod's server reading its documents).
pub struct ReadView<'a> {
    pub volumes: &'a [Tree],
    pub volume_read_only: &'a [bool],
    pub mounts: &'a [Mount],
    pub root: &'a Tree,
}

/// Where a path lives: the root layer, or a volume with the path inside it.
enum At {
    Root(String),
    Volume { index: usize, inner: String, read_only: bool },
}

impl ReadView<'_> {
    fn locate(&self, path: &str) -> At {
        let p = normalise(path);
        let mut best: Option<&Mount> = None;
        for m in self.mounts {
            let mp = normalise(&m.path);
            let hit = p == mp || mp == "/" || p.starts_with(&format!("{mp}/"));
            if hit && best.is_none_or(|b| normalise(&b.path).len() < mp.len()) {
                best = Some(m);
            }
        }
        match best {
            Some(m) => {
                let mp = normalise(&m.path);
                let rest = if mp == "/" { p.clone() } else { p[mp.len()..].to_string() };
                let inner = normalise(&format!("/{}/{}", m.sub_path, rest));
                let ro = m.read_only || self.volume_read_only.get(m.volume).copied().unwrap_or(true);
                At::Volume { index: m.volume, inner, read_only: ro }
            }
            None => At::Root(p),
        }
    }
    fn tree(&self, at: &At) -> Option<(&Tree, String)> {
        match at {
            At::Root(p) => Some((self.root, p.clone())),
            At::Volume { index, inner, .. } => self.volumes.get(*index).map(|t| (t, inner.clone())),
        }
    }
    /// Whether `path` is a mount point or above one (a directory even when empty).
    fn is_mount_point(&self, path: &str) -> bool {
        let p = normalise(path);
        self.mounts.iter().any(|m| normalise(&m.path) == p || normalise(&m.path).starts_with(&format!("{}/", if p == "/" { "" } else { &p })))
    }

    /// `Some(true)` for a directory, `Some(false)` for a file, `None` when absent.
    pub fn kind(&self, path: &str) -> Option<bool> {
        let at = self.locate(path);
        let (t, p) = self.tree(&at)?;
        if t.files.contains_key(&p) {
            return Some(false);
        }
        if t.is_dir(&p) || self.is_mount_point(path) {
            return Some(true);
        }
        None
    }
    pub fn read(&self, path: &str) -> Result<String, FsError> {
        let at = self.locate(path);
        let (t, p) = self.tree(&at).ok_or(FsError::NotFound)?;
        match t.files.get(&p) {
            Some(c) => Ok(c.to_string()),
            None if t.is_dir(&p) || self.is_mount_point(path) => Err(FsError::IsDir),
            None => Err(FsError::NotFound),
        }
    }
    fn parent_ok(&self, path: &str) -> Result<(), FsError> {
        let p = normalise(path);
        let parent = match p.rfind('/') {
            Some(0) | None => return Ok(()),
            Some(i) => &p[..i],
        };
        match self.kind(parent) {
            Some(true) => Ok(()),
            Some(false) => Err(FsError::NotDir),
            None => Err(FsError::NotFound),
        }
    }
    /// A directory's entries, sorted; mount points under it are listed too.
    pub fn list(&self, path: &str) -> Result<Vec<(String, bool)>, FsError> {
        match self.kind(path) {
            None => return Err(FsError::NotFound),
            Some(false) => return Err(FsError::NotDir),
            Some(true) => {}
        }
        let at = self.locate(path);
        let (t, p) = self.tree(&at).ok_or(FsError::NotFound)?;
        let mut out: BTreeMap<String, bool> = t.list(&p).into_iter().collect_tree();
        let base = normalise(path);
        let prefix = if base == "/" { "/".to_string() } else { format!("{base}/") };
        for m in self.mounts {
            let mp = normalise(&m.path);
            if let Some(rest) = mp.strip_prefix(&prefix) {
                let first = rest.split('/').next().unwrap_or("");
                if !first.is_empty() {
                    out.insert(first.to_string(), true);
                }
            }
        }
        Ok(out.into_iter().collect())
    }
}

impl View<'_> {
    pub fn ro(&self) -> ReadView<'_> {
        ReadView { volumes: self.volumes, volume_read_only: self.volume_read_only, mounts: self.mounts, root: self.root }
    }
    fn tree_mut(&mut self, at: &At) -> Result<(&mut Tree, String), FsError> {
        match at {
            At::Root(p) => Ok((&mut *self.root, p.clone())),
            At::Volume { read_only: true, .. } => Err(FsError::ReadOnly),
            At::Volume { index, inner, .. } => self.volumes.get_mut(*index).map(|t| (t, inner.clone())).ok_or(FsError::ReadOnly),
        }
    }
    pub fn kind(&self, path: &str) -> Option<bool> {
        self.ro().kind(path)
    }
    pub fn read(&self, path: &str) -> Result<String, FsError> {
        self.ro().read(path)
    }
    pub fn list(&self, path: &str) -> Result<Vec<(String, bool)>, FsError> {
        self.ro().list(path)
    }
    pub fn write(&mut self, path: &str, data: &str, append: bool) -> Result<(), FsError> {
        if self.kind(path) == Some(true) {
            return Err(FsError::IsDir);
        }
        let at = self.ro().locate(path);
        self.tree_mut(&at)?;
        self.ro().parent_ok(path)?;
        let (t, p) = self.tree_mut(&at)?;
        let entry = t.files.entry(p).or_default();
        if append {
            entry.push_str(data);
        } else {
            *entry = data.into();
        }
        Ok(())
    }
    pub fn remove(&mut self, path: &str, recursive: bool) -> Result<(), FsError> {
        let kind = self.kind(path).ok_or(FsError::NotFound)?;
        let at = self.ro().locate(path);
        let (t, p) = self.tree_mut(&at)?;
        if !kind {
            t.files.remove(&p);
            return Ok(());
        }
        if !recursive {
            return Err(FsError::IsDir);
        }
        let prefix = format!("{p}/");
        t.files.retain(|k, _| !k.starts_with(&prefix));
        t.dirs.retain(|k| !k.starts_with(&prefix));
        t.dirs.remove(&p);
        Ok(())
    }
    pub fn mkdir(&mut self, path: &str, parents: bool) -> Result<(), FsError> {
        match self.kind(path) {
            Some(_) if parents => return Ok(()),
            Some(_) => return Err(FsError::Exists),
            None => {}
        }
        if !parents {
            self.ro().parent_ok(path)?;
        }
        let at = self.ro().locate(path);
        let (t, p) = self.tree_mut(&at)?;
        t.dirs.insert(p);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_shadow_the_layer_and_read_only_volumes_refuse_writes() {
        let mut volumes = vec![Tree::with_files([("special.how".to_string(), "very".to_string())]), Tree::default()];
        let ro = [true, false];
        let mounts = vec![
            Mount { path: "/etc/config".into(), volume: 0, sub_path: String::new(), read_only: false },
            Mount { path: "/cache".into(), volume: 1, sub_path: String::new(), read_only: false },
        ];
        let mut root = Tree::default();
        let mut v = View { volumes: &mut volumes, volume_read_only: &ro, mounts: &mounts, root: &mut root };
        assert_eq!(v.read("/etc/config/special.how").unwrap(), "very");
        assert_eq!(v.write("/etc/config/x", "y", false), Err(FsError::ReadOnly));
        assert_eq!(v.list("/etc/config").unwrap(), vec![("special.how".to_string(), false)]);
        assert_eq!(v.kind("/cache"), Some(true));
        v.write("/cache/a", "1\n", false).unwrap();
        v.write("/cache/a", "2\n", true).unwrap();
        assert_eq!(v.read("/cache/a").unwrap(), "1\n2\n");
        assert_eq!(v.write("/nope/x", "", false), Err(FsError::NotFound));
        v.write("/tmp/healthy", "", false).unwrap_err();
        v.mkdir("/tmp", false).unwrap();
        v.write("/tmp/healthy", "", false).unwrap();
        assert!(v.list("/").unwrap().contains(&("etc".to_string(), true)));
        v.remove("/tmp/healthy", false).unwrap();
        assert_eq!(v.read("/tmp/healthy"), Err(FsError::NotFound));
        assert_eq!(volumes[1].files.get("/a").map(Content::as_str), Some("1\n2\n"));
    }

    #[test]
    fn contents_alike_are_kept_once_until_written() {
        let ca = "-----BEGIN CERTIFICATE-----\nMIIBdjCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAjMSEwHwYDVQQDDBhrM3Mtc2VydmVy\n";
        // Two strings alike, in different places.
        let copy: String = ca.chars().collect();
        let (a, mut b) = (Content::shared(ca), Content::shared(&copy));
        assert_eq!(a.as_ptr(), b.as_ptr(), "one copy for both");
        b.push_str("more\n");
        assert_eq!(a.as_str(), ca, "a write to one copy leaves the other");
        assert!(b.ends_with("more\n"));
    }
}
