//! Command lines: shell-style splitting, here-documents, and kubectl's flags.

/// Split a command line the way a POSIX shell would (quotes and backslashes).
pub fn split_args(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err("unterminated quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => {
                            if let Some(x) = chars.next() {
                                cur.push(x)
                            }
                        }
                        Some(x) => cur.push(x),
                        None => return Err("unterminated quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(x) = chars.next() {
                    cur.push(x);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c)
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// Parsed common flags.
#[derive(Default, Clone)]
pub(super) struct Flags {
    pub(super) namespace: Option<String>,
    pub(super) selector: Option<String>,
    pub(super) all_namespaces: bool,
    pub(super) values: Vec<(String, String)>,
    pub(super) positional: Vec<String>,
}

/// Long flags whose value may follow as a separate word (`--as ajay`).
pub(super) const VALUE_FLAGS: &[&str] = &[
    "--as",
    "--as-group",
    "--replicas",
    "--cascade",
    "--patch",
    "--type",
    "--subresource",
    "--sort-by",
    "--field-selector",
    "--grace-period",
    "--timeout",
    "--container",
    "--tail",
    "--since",
    "--min",
    "--max",
    "--cpu-percent",
    "--cpu",
    "--memory",
    "--raw",
    "--image",
    "--port",
    "--env",
    "--labels",
    "--restart",
    "--target-port",
    "--name",
    "--protocol",
    "--image-pull-policy",
    "--annotations",
    "--cluster-ip",
    "--external-ip",
    "--session-affinity",
    "--load-balancer-ip",
    "--for",
    "--types",
    "--schedule",
    "--value",
    "--description",
    "--preemption-policy",
    "--containers",
    "--limits",
    "--requests",
];

pub(super) fn parse_flags(args: &[String]) -> Result<Flags, String> {
    let mut f = Flags::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let mut take = |name: &str| -> Result<Option<String>, String> {
            if let Some(v) = a.strip_prefix(&format!("{name}=")) {
                return Ok(Some(v.to_string()));
            }
            if a == name {
                i += 1;
                return args.get(i).cloned().map(Some).ok_or_else(|| format!("flag needs an argument: {name}"));
            }
            Ok(None)
        };
        if let Some(v) = take("-n")?.or(take("--namespace")?) {
            f.namespace = Some(v);
        } else if let Some(v) = take("-l")?.or(take("--selector")?) {
            f.selector = Some(v);
        } else if let Some(v) = take("-f")?.or(take("--filename")?) {
            f.values.push(("--filename".into(), v));
        } else if let Some(v) = take("-o")?.or(take("--output")?) {
            f.values.push(("--output".into(), v));
        } else if a == "-A" || a == "--all-namespaces" || a == "--all-namespaces=true" {
            f.all_namespaces = true;
        } else if a == "--all-namespaces=false" {
            f.all_namespaces = false;
        } else if a.starts_with("--") {
            let (k, v) = match a.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                // Flags that take a value may have it as the next word.
                None if VALUE_FLAGS.contains(&a.as_str()) => {
                    i += 1;
                    (a.clone(), args.get(i).cloned().ok_or_else(|| format!("flag needs an argument: {a}"))?)
                }
                None => (a.clone(), "true".to_string()),
            };
            f.values.push((k, v));
        } else {
            f.positional.push(a.clone());
        }
        i += 1;
    }
    Ok(f)
}

impl Flags {
    pub(super) fn get(&self, k: &str) -> Option<&str> {
        self.values.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }
}

/// Whether a switch is on (`--no-headers`, `--no-headers=true`).
pub(super) fn switch(f: &Flags, k: &str) -> bool {
    f.get(k) == Some("true")
}

/// The subcommand of a command line (`logs` in `kubectl logs web`).
pub fn verb_of(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace();
    let first = words.next()?;
    if first == "kubectl" {
        words.next()
    } else {
        Some(first)
    }
}

/// Split `apply -f - <<EOF` and the lines up to `EOF` into the command and the
/// here-document's text (kubectl's stdin).
pub fn heredoc(line: &str) -> (String, Option<String>) {
    let Some((first, rest)) = line.split_once('\n') else { return (line.to_string(), None) };
    let Some(pos) = first.find("<<") else { return (line.to_string(), None) };
    let marker = first[pos + 2..].trim().trim_start_matches('-').trim_matches(['\'', '"']);
    let mut body = String::new();
    for l in rest.lines() {
        if l.trim() == marker {
            break;
        }
        body.push_str(l);
        body.push('\n');
    }
    (first[..pos].trim_end().to_string(), Some(body))
}

/// Whether a command line opens a here-document (`<<EOF`) that no line has closed yet.
pub fn heredoc_open(line: &str) -> bool {
    let first = line.lines().next().unwrap_or("");
    let Some(pos) = first.find("<<") else { return false };
    let marker = first[pos + 2..].trim().trim_start_matches('-').trim_matches(['\'', '"']);
    !marker.is_empty() && !line.lines().skip(1).any(|l| l.trim() == marker)
}

/// `-f FILE` for the commands that read manifests: only `-f -` with a here-document (or
/// the page's editor, which the sandbox passes the same way) can be read here.
pub(super) fn manifest_input(f: &Flags, stdin: Option<&str>) -> Result<(String, &'static str), String> {
    match (f.get("--filename"), stdin) {
        (Some("-"), Some(text)) => Ok((text.to_string(), "STDIN")),
        (Some("-"), None) => Err("error: no objects passed to apply".into()),
        (Some(path), _) => Err(format!("error: the path {path:?} does not exist")),
        (None, _) => Err("error: must specify one of -f and -k".into()),
    }
}
