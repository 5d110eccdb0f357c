//! `kubeloop-split`: the page's WebAssembly in two parts, so that a first visit downloads
//! only the code it runs.
//!
//! * `instrument IN OUT` writes IN with a one-byte mark per function, set when the function
//!   first runs, in a second memory exported as `__kubeloop_profile`.
//! * `hits IN PROFILE` prints the names of the functions whose mark is set in PROFILE, the
//!   bytes of that memory. A name carries its symbol hash, which comes from the crate's
//!   build metadata, the item's path and its generic arguments, not from its code: the list
//!   outlives edits, and a new toolchain or dependency renews every name (the split then
//!   warns that the list is out of date).
//! * `instrument --blocks IN OUT` marks every stretch of straight-line code instead (the
//!   start of a body, and after each `block`, `loop`, `if`, `else`, `end` and `br_if`);
//!   `cold IN PROFILE [N]` then lists the N functions that ran with the most bytes that did
//!   not: the cold paths a first visit downloads because they sit inside hot functions,
//!   to be moved out of line in the source (`#[inline(never)]`); `cold IN PROFILE --in
//!   NAME` shows where in the function named NAME: each stretch, whether it ran, its bytes
//!   and the functions it calls.
//! * `split IN KEEP PRIMARY REST` writes PRIMARY, IN with every function whose name is not
//!   listed in KEEP (a line ending in `*` lists every name it starts; and that is worth
//!   moving) replaced by a stub, and REST, a module that
//!   holds those functions. A stub loads REST (through the page's `kubeloopLoadRest`
//!   import) the first time one runs, then calls the function through the function table,
//!   where REST's element segment put it. REST imports what it uses from PRIMARY's exports
//!   (`$f…`, `$g…`, `$t…`, `$m…`); its start function sets PRIMARY's `$loaded` global.
//!
//! The page fetches REST in the background as soon as it runs (crates/web/src/rest.rs), so a stub
//! rarely waits; `scripts/split-profile` writes KEEP (web/first-visit.txt) from a run of
//! the instrumented page.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::process::ExitCode;

use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{
    CodeSection, ConstExpr, ElementSection, Elements, EntityType, ExportKind, ExportSection, Function, FunctionSection, GlobalType, ImportSection, Instruction,
    MemArg, MemoryType, Module as Out, RawSection, StartSection, TableSection, TypeSection, ValType,
};
use wasmparser::{FunctionBody, Operator, Parser, Payload, TypeRef};

type Error = Box<dyn std::error::Error>;

/// The name of the page's import that loads the rest: wasm-bindgen names it
/// `__wbg_<js name>_<hash>`.
const LOADER: &str = "__wbg_kubeloopLoadRest_";
/// A body this small costs less than its stub and its exports; it stays.
const WORTH_MOVING: usize = 40;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let run = || -> Result<(), Error> {
        match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["instrument", input, out] => {
                let data = std::fs::read(input)?;
                std::fs::write(out, instrument(&Module::parse(&data)?, false)?)?;
            }
            ["instrument", "--blocks", input, out] => {
                let data = std::fs::read(input)?;
                std::fs::write(out, instrument(&Module::parse(&data)?, true)?)?;
            }
            ["cold", input, profile, "--in", name] => {
                let data = std::fs::read(input)?;
                print!("{}", cold_stretches(&Module::parse(&data)?, &std::fs::read(profile)?, name)?);
            }
            ["cold", input, profile, ref top @ ..] if top.len() <= 1 => {
                let data = std::fs::read(input)?;
                let top = top.first().map_or(Ok(40), |n| n.parse()).map_err(|_| "N is a number")?;
                print!("{}", cold(&Module::parse(&data)?, &std::fs::read(profile)?, top)?);
            }
            ["hits", input, profile] => {
                let data = std::fs::read(input)?;
                let m = Module::parse(&data)?;
                let marks = std::fs::read(profile)?;
                let names: BTreeSet<String> = (0..m.bodies.len())
                    .filter(|&i| marks.get(i).is_some_and(|&b| b != 0))
                    .filter_map(|i| m.names.get(&(m.func_imports + i as u32)).map(|n| n.to_string()))
                    .collect();
                for n in names {
                    println!("{n}");
                }
            }
            ["split", input, keep, primary, rest] => {
                let data = std::fs::read(input)?;
                let m = Module::parse(&data)?;
                let keep: BTreeSet<String> =
                    std::fs::read_to_string(keep)?.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from).collect();
                let (p, r, moved) = split(&m, &keep)?;
                let mut features = wasmparser::WasmFeatures::default();
                features.insert(wasmparser::WasmFeatures::MULTI_MEMORY);
                for (what, bytes) in [("first part", &p), ("rest", &r)] {
                    wasmparser::Validator::new_with_features(features).validate_all(bytes).map_err(|e| format!("the {what} is not valid: {e}"))?;
                }
                std::fs::write(primary, &p)?;
                std::fs::write(rest, &r)?;
                eprintln!("kubeloop-split: {} of {} functions moved to the rest; first part {} B, rest {} B", moved, m.bodies.len(), p.len(), r.len());
            }
            _ => {
                return Err(
                    "usage: kubeloop-split instrument [--blocks] IN OUT | hits IN PROFILE | cold IN PROFILE [N | --in NAME] | split IN KEEP PRIMARY REST"
                        .into(),
                )
            }
        }
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kubeloop-split: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What the splitter needs of a module; sections it does not change are copied as bytes.
struct Module<'a> {
    data: &'a [u8],
    /// Every non-custom section but code, in order: (id, body range).
    sections: Vec<(u8, Range<usize>)>,
    /// Index of the code section among `sections` (it is inserted there).
    code_at: usize,
    /// Parameter count of each type (0 for non-function types).
    params: Vec<u32>,
    func_imports: u32,
    /// The type of each imported function.
    import_types: Vec<u32>,
    loader: Option<u32>,
    func_types: Vec<u32>,
    tables: Vec<wasmparser::TableType>,
    defined_tables: Vec<wasmparser::Table<'a>>,
    memories: Vec<wasmparser::MemoryType>,
    globals: Vec<wasmparser::GlobalType>,
    start: Option<u32>,
    /// Functions the module's element segments and exports name (callable from outside
    /// any function body).
    named_outside: BTreeSet<u32>,
    bodies: Vec<FunctionBody<'a>>,
    names: BTreeMap<u32, &'a str>,
}

impl<'a> Module<'a> {
    fn parse(data: &'a [u8]) -> Result<Self, Error> {
        let mut m = Module {
            data,
            sections: vec![],
            code_at: 0,
            params: vec![],
            func_imports: 0,
            import_types: vec![],
            loader: None,
            func_types: vec![],
            tables: vec![],
            defined_tables: vec![],
            memories: vec![],
            globals: vec![],
            start: None,
            named_outside: BTreeSet::new(),
            bodies: vec![],
            names: BTreeMap::new(),
        };
        for payload in Parser::new(0).parse_all(data) {
            let payload = payload?;
            if let Some((id, range)) = payload.as_section() {
                if id != 0 && id != 10 {
                    m.sections.push((id, range));
                }
            }
            match payload {
                Payload::TypeSection(r) => {
                    for group in r {
                        for ty in group?.into_types() {
                            m.params.push(match &ty.composite_type.inner {
                                wasmparser::CompositeInnerType::Func(f) => f.params().len() as u32,
                                _ => 0,
                            });
                        }
                    }
                }
                Payload::ImportSection(r) => {
                    for import in r.into_imports() {
                        let import = import?;
                        match import.ty {
                            TypeRef::Func(t) | TypeRef::FuncExact(t) => {
                                if import.name.starts_with(LOADER) && m.params.get(t as usize) == Some(&1) {
                                    m.loader = Some(m.func_imports);
                                }
                                m.import_types.push(t);
                                m.func_imports += 1;
                            }
                            TypeRef::Table(t) => m.tables.push(t),
                            TypeRef::Memory(t) => m.memories.push(t),
                            TypeRef::Global(t) => m.globals.push(t),
                            TypeRef::Tag(_) => return Err("tags are not supported".into()),
                        }
                    }
                }
                Payload::FunctionSection(r) => {
                    for t in r {
                        m.func_types.push(t?);
                    }
                }
                Payload::TableSection(r) => {
                    for t in r {
                        let t = t?;
                        m.tables.push(t.ty);
                        m.defined_tables.push(t);
                    }
                }
                Payload::MemorySection(r) => {
                    for t in r {
                        m.memories.push(t?);
                    }
                }
                Payload::GlobalSection(r) => {
                    for g in r {
                        m.globals.push(g?.ty);
                    }
                }
                Payload::StartSection { func, .. } => m.start = Some(func),
                Payload::ExportSection(r) => {
                    for e in r {
                        let e = e?;
                        if e.kind == wasmparser::ExternalKind::Func {
                            m.named_outside.insert(e.index);
                        }
                    }
                }
                Payload::ElementSection(r) => {
                    for segment in r {
                        match segment?.items {
                            wasmparser::ElementItems::Functions(fs) => {
                                for f in fs {
                                    m.named_outside.insert(f?);
                                }
                            }
                            wasmparser::ElementItems::Expressions(_, es) => {
                                for e in es {
                                    let mut ops = e?.get_operators_reader();
                                    while !ops.eof() {
                                        if let Operator::RefFunc { function_index } = ops.read()? {
                                            m.named_outside.insert(function_index);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                Payload::CodeSectionStart { .. } => m.code_at = m.sections.len(),
                Payload::CodeSectionEntry(body) => m.bodies.push(body),
                Payload::CustomSection(c) => {
                    if let wasmparser::KnownCustom::Name(names) = c.as_known() {
                        for sub in names {
                            if let wasmparser::Name::Function(map) = sub? {
                                for n in map {
                                    let n = n?;
                                    m.names.insert(n.index, n.name);
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        // The split adds globals and exports: a module without those sections gets empty ones.
        const ORDER: [u8; 13] = [1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 12, 10, 11];
        let rank = |id: u8| ORDER.iter().position(|&o| o == id).unwrap_or(usize::MAX);
        for id in [6, 7] {
            if !m.sections.iter().any(|s| s.0 == id) {
                let at = m.sections.iter().position(|s| rank(s.0) > rank(id)).unwrap_or(m.sections.len());
                m.sections.insert(at, (id, 0..0));
                if at <= m.code_at {
                    m.code_at += 1;
                }
            }
        }
        Ok(m)
    }

    fn bytes(&self, range: &Range<usize>) -> &'a [u8] {
        &self.data[range.clone()]
    }

    fn type_of(&self, func: u32) -> u32 {
        match func.checked_sub(self.func_imports) {
            Some(i) => self.func_types[i as usize],
            None => self.import_types[func as usize],
        }
    }

    fn body_bytes(&self, i: usize) -> &'a [u8] {
        self.bytes(&self.bodies[i].range())
    }
}

/// A section whose entries are kept, with more appended.
fn appended(m: &Module, id: u8, extra_count: u32, extra: &[u8]) -> Result<RawSection<'static>, Error> {
    let range = m.sections.iter().find(|s| s.0 == id).map(|s| s.1.clone()).ok_or("a section the split needs is missing")?;
    let mut reader = wasmparser::BinaryReader::new(m.bytes(&range), 0);
    let count = if range.is_empty() { 0 } else { reader.read_var_u32()? };
    let rest = &m.bytes(&range)[reader.original_position()..];
    let mut body = vec![];
    wasm_encoder::Encode::encode(&(count + extra_count), &mut body);
    body.extend_from_slice(rest);
    body.extend_from_slice(extra);
    Ok(RawSection { id, data: Box::leak(body.into_boxed_slice()) })
}

/// Writes `m`'s sections in order, `replace` choosing what stands in for some of them;
/// the code section is `code`. Custom sections are left out.
fn assemble(m: &Module, code: &CodeSection, mut replace: impl FnMut(u8) -> Result<Option<RawSection<'static>>, Error>) -> Result<Vec<u8>, Error> {
    let mut out = Out::new();
    for (i, (id, range)) in m.sections.iter().enumerate() {
        if i == m.code_at {
            out.section(code);
        }
        match replace(*id)? {
            Some(s) => out.section(&s),
            // An empty section the parse made up.
            None if range.is_empty() => &mut out,
            None => out.section(&RawSection { id: *id, data: m.bytes(range) }),
        };
    }
    if m.code_at == m.sections.len() {
        out.section(code);
    }
    Ok(out.finish())
}

/// An encoded section's body (its count and entries), without its size.
fn body(section: &impl wasm_encoder::Encode) -> Result<Vec<u8>, Error> {
    let mut bytes = vec![];
    section.encode(&mut bytes);
    let mut r = wasmparser::BinaryReader::new(&bytes, 0);
    r.read_var_u32()?;
    Ok(bytes[r.original_position()..].to_vec())
}

/// An encoded section's entries, without its size and count.
fn entries(section: &impl wasm_encoder::Encode) -> Result<Vec<u8>, Error> {
    let bytes = body(section)?;
    let mut r = wasmparser::BinaryReader::new(&bytes, 0);
    r.read_var_u32()?;
    Ok(bytes[r.original_position()..].to_vec())
}

fn encode<T: wasm_encoder::Encode>(items: impl IntoIterator<Item = T>) -> Vec<u8> {
    let mut v = vec![];
    for i in items {
        i.encode(&mut v);
    }
    v
}

fn instrument(m: &Module, blocks: bool) -> Result<Vec<u8>, Error> {
    if m.memories.is_empty() || !m.sections.iter().any(|s| s.0 == 5) {
        return Err("the module defines no memory".into());
    }
    let profile = m.memories.len() as u32;
    let mut code = CodeSection::new();
    let mut next_mark = 0u32;
    for i in 0..m.bodies.len() {
        let bytes = m.body_bytes(i);
        let points = if blocks { mark_points(&m.bodies[i])? } else { vec![code_start(&m.bodies[i])?] };
        let mut out = Vec::with_capacity(bytes.len() + 12 * points.len());
        let mut from = 0;
        for at in points {
            out.extend_from_slice(&bytes[from..at]);
            for ins in [
                Instruction::I32Const(next_mark as i32),
                Instruction::I32Const(1),
                Instruction::I32Store8(MemArg { offset: 0, align: 0, memory_index: profile }),
            ] {
                wasm_encoder::Encode::encode(&ins, &mut out);
            }
            next_mark += 1;
            from = at;
        }
        out.extend_from_slice(&bytes[from..]);
        code.raw(&out);
    }
    let pages = u64::from(next_mark).div_ceil(65536).max(1);
    let memory = MemoryType { minimum: pages, maximum: None, memory64: false, shared: false, page_size_log2: None };
    let mut export = vec![];
    wasm_encoder::Encode::encode("__kubeloop_profile", &mut export);
    export.push(0x02);
    wasm_encoder::Encode::encode(&profile, &mut export);
    assemble(m, &code, |id| match id {
        5 => appended(m, 5, 1, &encode([memory])).map(Some),
        7 => appended(m, 7, 1, &export).map(Some),
        _ => Ok(None),
    })
}

/// Where a body's instructions start, from the start of the body.
fn code_start(body: &FunctionBody) -> Result<usize, Error> {
    let mut locals = body.get_locals_reader()?;
    for _ in 0..locals.get_count() {
        locals.read()?;
    }
    Ok(locals.original_position() - body.range().start)
}

/// The places in a body (offsets from its start) where a run enters a stretch of
/// straight-line code: the first instruction, and after each instruction that opens or
/// closes a block or branches on a condition. A mark there costs no stack: it pushes
/// two values and stores them.
fn mark_points(body: &FunctionBody) -> Result<Vec<usize>, Error> {
    let start = body.range().start;
    let len = body.range().end - start;
    let mut points = vec![code_start(body)?];
    let mut ops = body.get_operators_reader()?;
    while !ops.eof() {
        let op = ops.read()?;
        let after = ops.original_position() - start;
        if after < len
            && matches!(op, Operator::Block { .. } | Operator::Loop { .. } | Operator::If { .. } | Operator::Else | Operator::End | Operator::BrIf { .. })
        {
            points.push(after);
        }
    }
    Ok(points)
}

/// The functions that ran (their first mark set in a `--blocks` PROFILE), the `top` with
/// the most bytes that did not run first: bytes cold, bytes run, name.
fn cold(m: &Module, profile: &[u8], top: usize) -> Result<String, Error> {
    let mut rows = vec![];
    let mut next_mark = 0usize;
    let (mut all_hot, mut all_cold) = (0, 0);
    for (i, body) in m.bodies.iter().enumerate() {
        let points = mark_points(body)?;
        let len = body.range().end - body.range().start;
        let ran = |k: usize| profile.get(next_mark + k).is_some_and(|&b| b != 0);
        if ran(0) {
            let (mut hot, mut cold) = (points[0], 0);
            for (k, at) in points.iter().enumerate() {
                let end = points.get(k + 1).copied().unwrap_or(len);
                if ran(k) {
                    hot += end - at;
                } else {
                    cold += end - at;
                }
            }
            all_hot += hot;
            all_cold += cold;
            rows.push((cold, hot, m.names.get(&(m.func_imports + i as u32)).copied().unwrap_or("?")));
        }
        next_mark += points.len();
    }
    rows.sort_by(|a, b| b.cmp(a));
    let mut out = format!("{} functions ran: {all_hot} B of their code ran, {all_cold} B did not\n", rows.len());
    for (cold, hot, name) in rows.into_iter().take(top) {
        out += &format!("{cold:8} {hot:8}  {name}\n");
    }
    Ok(out)
}

/// The stretches of the functions whose name contains `name`, in order: ran or not,
/// bytes, and the functions each calls.
fn cold_stretches(m: &Module, profile: &[u8], name: &str) -> Result<String, Error> {
    let mut next_mark = 0usize;
    let mut out = String::new();
    for (i, body) in m.bodies.iter().enumerate() {
        let points = mark_points(body)?;
        let fname = m.names.get(&(m.func_imports + i as u32)).copied().unwrap_or("?");
        if fname.contains(name) {
            let start = body.range().start;
            let len = body.range().end - start;
            let mut calls: Vec<Vec<u32>> = vec![vec![]; points.len()];
            let mut ops = body.get_operators_reader()?;
            let mut k = 0;
            while !ops.eof() {
                let at = ops.original_position() - start;
                while k + 1 < points.len() && points[k + 1] <= at {
                    k += 1;
                }
                if let Operator::Call { function_index } = ops.read()? {
                    calls[k].push(function_index);
                }
            }
            out += &format!("{fname}\n");
            for (k, at) in points.iter().enumerate() {
                let end = points.get(k + 1).copied().unwrap_or(len);
                let ran = profile.get(next_mark + k).is_some_and(|&b| b != 0);
                let names: Vec<&str> = calls[k].iter().map(|f| m.names.get(f).copied().unwrap_or("?")).collect();
                out += &format!("  {} {:6} {}\n", if ran { "ran " } else { "cold" }, end - at, names.join(" "));
            }
        }
        next_mark += points.len();
    }
    Ok(out)
}

/// What a function body refers to, so that it can live in the rest.
#[derive(Default)]
struct Refs {
    funcs: BTreeSet<u32>,
    globals: BTreeSet<u32>,
}

/// The functions and globals `body` uses, and whether it uses nothing the rest cannot
/// import (data or element segments, `ref.func`).
fn refs(body: &FunctionBody) -> Result<(Refs, bool), Error> {
    let mut r = Refs::default();
    let mut movable = true;
    let mut ops = body.get_operators_reader()?;
    while !ops.eof() {
        match ops.read()? {
            Operator::Call { function_index } | Operator::ReturnCall { function_index } => {
                r.funcs.insert(function_index);
            }
            Operator::RefFunc { function_index } => {
                r.funcs.insert(function_index);
                movable = false;
            }
            Operator::GlobalGet { global_index } | Operator::GlobalSet { global_index } => {
                r.globals.insert(global_index);
            }
            Operator::MemoryInit { .. } | Operator::DataDrop { .. } | Operator::TableInit { .. } | Operator::ElemDrop { .. } => movable = false,
            _ => {}
        }
    }
    Ok((r, movable))
}

/// Renumbers a moved body's functions and globals into the rest's index spaces.
struct Renumber<'m> {
    funcs: &'m BTreeMap<u32, u32>,
    globals: &'m BTreeMap<u32, u32>,
}

impl Reencode for Renumber<'_> {
    type Error = std::convert::Infallible;
    fn function_index(&mut self, func: u32) -> Result<u32, wasm_encoder::reencode::Error<Self::Error>> {
        Ok(self.funcs[&func])
    }
    fn global_index(&mut self, global: u32) -> Result<u32, wasm_encoder::reencode::Error<Self::Error>> {
        Ok(self.globals[&global])
    }
}

/// An export name for index `i` of a kind: `$f12`, `$g0`.
fn export_name(kind: char, i: u32) -> String {
    format!("${kind}{i}")
}

fn split(m: &Module, keep: &BTreeSet<String>) -> Result<(Vec<u8>, Vec<u8>, usize), Error> {
    let loader = m.loader.ok_or("the page's wasm does not import kubeloopLoadRest")?;
    let Some(table0) = m.defined_tables.first().filter(|_| m.tables.len() == m.defined_tables.len()) else {
        return Err("the function table is imported; the split needs it defined".into());
    };
    // A listed name ending in `*` keeps every function whose name starts with the rest.
    let prefixes: Vec<&str> = keep.iter().filter_map(|k| k.strip_suffix('*')).collect();
    // The functions that could move (not listed, no data or element segment instructions),
    // with what each uses.
    let mut movable: BTreeMap<u32, Refs> = BTreeMap::new();
    for (i, body) in m.bodies.iter().enumerate() {
        let index = m.func_imports + i as u32;
        // A function with no name cannot be found in the list: it stays.
        let listed = m.names.get(&index).is_none_or(|n| keep.contains(*n) || prefixes.iter().any(|p| n.starts_with(p)));
        if listed || Some(index) == m.start {
            continue;
        }
        if let (r, true) = refs(body)? {
            movable.insert(index, r);
        }
    }
    // What the first part calls needs a stub where it was; a function too small to be worth
    // its stub then stays, and what it calls is called from the first part in turn.
    let mut called: BTreeSet<u32> = m.named_outside.clone();
    called.extend(m.start);
    for (i, body) in m.bodies.iter().enumerate() {
        let index = m.func_imports + i as u32;
        if !movable.contains_key(&index) {
            called.extend(refs(body)?.0.funcs);
        }
    }
    loop {
        let small: Vec<u32> =
            movable.keys().copied().filter(|f| called.contains(f) && m.body_bytes((f - m.func_imports) as usize).len() < WORTH_MOVING).collect();
        if small.is_empty() {
            break;
        }
        for f in small {
            if let Some(r) = movable.remove(&f) {
                called.extend(r.funcs);
            }
        }
    }
    let moved = movable;
    let found = m.names.values().filter(|n| keep.contains(**n)).count();
    if found * 10 < (keep.len() - prefixes.len()) * 9 {
        eprintln!(
            "kubeloop-split: warning: only {found} of the {} functions listed to keep are in this build: \
             the list is out of date (run scripts/split-profile)",
            keep.len() - prefixes.len()
        );
    }
    let base = table0.ty.initial as u32;
    // A table slot, and a stub, for each moved function the first part calls; the others
    // leave an `unreachable` behind.
    let slot: BTreeMap<u32, u32> = moved.keys().filter(|f| called.contains(f)).enumerate().map(|(k, &f)| (f, base + k as u32)).collect();
    let loaded = m.globals.len() as u32;

    // The rest imports these from the first part.
    let used_funcs: BTreeSet<u32> = moved.values().flat_map(|r| r.funcs.iter().copied()).filter(|f| !moved.contains_key(f)).collect();
    let used_globals: BTreeSet<u32> = moved.values().flat_map(|r| r.globals.iter().copied()).chain([loaded]).collect();
    let mut funcs: BTreeMap<u32, u32> = used_funcs.iter().enumerate().map(|(k, &f)| (f, k as u32)).collect();
    let imported = used_funcs.len() as u32;
    funcs.extend(moved.keys().enumerate().map(|(k, &f)| (f, imported + k as u32)));
    let globals: BTreeMap<u32, u32> = used_globals.iter().enumerate().map(|(k, &g)| (g, k as u32)).collect();

    // The first part: stubs, a larger table, the `$loaded` global and the exports.
    let mut code = CodeSection::new();
    for (i, _) in m.bodies.iter().enumerate() {
        let index = m.func_imports + i as u32;
        let Some(&s) = slot.get(&index) else {
            if moved.contains_key(&index) {
                code.function(Function::new([]).instruction(&Instruction::Unreachable).instruction(&Instruction::End));
            } else {
                code.raw(m.body_bytes(i));
            }
            continue;
        };
        let ty = m.func_types[i];
        let mut f = Function::new([]);
        f.instruction(&Instruction::GlobalGet(loaded))
            .instruction(&Instruction::I32Eqz)
            .instruction(&Instruction::If(wasm_encoder::BlockType::Empty))
            .instruction(&Instruction::I32Const(1))
            .instruction(&Instruction::Call(loader))
            .instruction(&Instruction::End);
        for p in 0..m.params[ty as usize] {
            f.instruction(&Instruction::LocalGet(p));
        }
        f.instruction(&Instruction::I32Const(s as i32))
            .instruction(&Instruction::CallIndirect { type_index: ty, table_index: 0 })
            .instruction(&Instruction::End);
        code.function(&f);
    }
    // The function table, in both parts, with a slot for each stub.
    let grow = |ty: &mut wasm_encoder::TableType| {
        ty.minimum += slot.len() as u64;
        ty.maximum = ty.maximum.map(|x| x + slot.len() as u64);
    };
    let mut tables = TableSection::new();
    let mut re = RoundtripReencoder;
    for (k, t) in m.defined_tables.iter().enumerate() {
        let mut ty = re.table_type(t.ty)?;
        if k == 0 {
            grow(&mut ty);
        }
        match &t.init {
            wasmparser::TableInit::RefNull => tables.table(ty),
            wasmparser::TableInit::Expr(e) => tables.table_with_init(ty, &re.const_expr(e.clone())?),
        };
    }
    let mut loaded_global = encode([GlobalType { val_type: ValType::I32, mutable: true, shared: false }]);
    wasm_encoder::Encode::encode(&ConstExpr::i32_const(0), &mut loaded_global);
    let mut exports = ExportSection::new();
    for &f in &used_funcs {
        exports.export(&export_name('f', f), ExportKind::Func, f);
    }
    for &g in &used_globals {
        exports.export(&export_name('g', g), ExportKind::Global, g);
    }
    for t in 0..m.tables.len() as u32 {
        exports.export(&export_name('t', t), ExportKind::Table, t);
    }
    for t in 0..m.memories.len() as u32 {
        exports.export(&export_name('m', t), ExportKind::Memory, t);
    }
    let export_entries = entries(&exports)?;
    let primary = assemble(m, &code, |id| match id {
        4 => Ok(Some(RawSection { id: 4, data: Box::leak(body(&tables)?.into_boxed_slice()) })),
        6 => appended(m, 6, 1, &loaded_global).map(Some),
        7 => appended(m, 7, exports.len(), &export_entries).map(Some),
        _ => Ok(None),
    })?;

    // The rest.
    let mut rest = Out::new();
    let start_type = m.params.len() as u32;
    let mut unit = TypeSection::new();
    unit.ty().function([], []);
    let unit_entry = entries(&unit)?;
    rest.section(&appended(m, 1, 1, &unit_entry)?);
    let mut imports = ImportSection::new();
    for &f in &used_funcs {
        let t = m.type_of(f);
        imports.import("p", &export_name('f', f), EntityType::Function(t));
    }
    for (k, t) in m.tables.iter().enumerate() {
        let mut ty = re.table_type(*t)?;
        if k == 0 {
            grow(&mut ty);
        }
        imports.import("p", &export_name('t', k as u32), EntityType::Table(ty));
    }
    for (k, t) in m.memories.iter().enumerate() {
        imports.import("p", &export_name('m', k as u32), EntityType::Memory(re.memory_type(*t)?));
    }
    for &g in &used_globals {
        let ty = if g == loaded { GlobalType { val_type: ValType::I32, mutable: true, shared: false } } else { re.global_type(m.globals[g as usize])? };
        imports.import("p", &export_name('g', g), EntityType::Global(ty));
    }
    rest.section(&imports);
    let mut functions = FunctionSection::new();
    for &f in moved.keys() {
        functions.function(m.func_types[(f - m.func_imports) as usize]);
    }
    functions.function(start_type);
    rest.section(&functions);
    let start = imported + moved.len() as u32;
    rest.section(&StartSection { function_index: start });
    let mut elements = ElementSection::new();
    let members: Vec<u32> = slot.keys().map(|f| funcs[f]).collect();
    elements.active(Some(0), &ConstExpr::i32_const(base as i32), Elements::Functions(members.into()));
    rest.section(&elements);
    let mut code = CodeSection::new();
    let mut renumber = Renumber { funcs: &funcs, globals: &globals };
    for &f in moved.keys() {
        let body = &m.bodies[(f - m.func_imports) as usize];
        let mut out = renumber.new_function_with_parsed_locals(body)?;
        let mut ops = body.get_operators_reader()?;
        while !ops.eof() {
            out.instruction(&renumber.parse_instruction(&mut ops)?);
        }
        code.function(&out);
    }
    let mut set = Function::new([]);
    set.instruction(&Instruction::I32Const(1)).instruction(&Instruction::GlobalSet(globals[&loaded])).instruction(&Instruction::End);
    code.function(&set);
    rest.section(&code);
    Ok((primary, rest.finish(), moved.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_encoder::{GlobalSection, IndirectNameMap, MemorySection, NameMap, NameSection};

    /// A module as the page's looks to the split: the loader import, a table, a memory,
    /// a stack pointer, two functions worth a stub (`kept`, listed, and `moved`) and two
    /// smaller (`tiny`, `helper`); `kept` calls `moved` and `helper`, `moved` calls `tiny`
    /// and uses the global.
    fn page() -> Vec<u8> {
        let mut m = Out::new();
        let mut types = TypeSection::new();
        types.ty().function([ValType::I32], []);
        types.ty().function([ValType::I32, ValType::I32], [ValType::I32]);
        m.section(&types);
        let mut imports = ImportSection::new();
        imports.import("wbg", "__wbg_kubeloopLoadRest_0123", EntityType::Function(0));
        m.section(&imports);
        let mut funcs = FunctionSection::new();
        funcs.function(1).function(1).function(1).function(1);
        m.section(&funcs);
        let mut tables = TableSection::new();
        tables.table(wasm_encoder::TableType { element_type: wasm_encoder::RefType::FUNCREF, minimum: 1, maximum: Some(1), table64: false, shared: false });
        m.section(&tables);
        let mut memories = MemorySection::new();
        memories.memory(MemoryType { minimum: 1, maximum: None, memory64: false, shared: false, page_size_log2: None });
        m.section(&memories);
        let mut globals = GlobalSection::new();
        globals.global(GlobalType { val_type: ValType::I32, mutable: true, shared: false }, &ConstExpr::i32_const(1024));
        m.section(&globals);
        let mut code = CodeSection::new();
        let long = |f: &mut Function| {
            for _ in 0..12 {
                f.instruction(&Instruction::LocalGet(0)).instruction(&Instruction::Drop);
            }
        };
        let mut kept = Function::new([]);
        long(&mut kept);
        kept.instruction(&Instruction::LocalGet(0))
            .instruction(&Instruction::LocalGet(1))
            .instruction(&Instruction::Call(4))
            .instruction(&Instruction::LocalGet(1))
            .instruction(&Instruction::Call(2))
            .instruction(&Instruction::End);
        let mut moved = Function::new([]);
        long(&mut moved);
        moved.instruction(&Instruction::GlobalGet(0)).instruction(&Instruction::LocalGet(1)).instruction(&Instruction::Call(3)).instruction(&Instruction::End);
        let mut tiny = Function::new([]);
        tiny.instruction(&Instruction::LocalGet(0)).instruction(&Instruction::End);
        code.function(&kept).function(&moved).function(&tiny).function(&tiny);
        m.section(&code);
        let mut names = NameSection::new();
        let mut map = NameMap::new();
        map.append(1, "kept");
        map.append(2, "moved");
        map.append(3, "tiny");
        map.append(4, "helper");
        names.functions(&map);
        names.locals(&IndirectNameMap::new());
        m.section(&names);
        m.finish()
    }

    #[test]
    fn moves_what_is_not_kept_behind_a_stub_and_a_table_slot() {
        let data = page();
        let m = Module::parse(&data).unwrap();
        let (_, _, none) = split(&m, &BTreeSet::from(["kept".to_string(), "mov*".to_string()])).unwrap();
        assert_eq!(none, 0, "a name ending in * keeps every function it starts");
        let keep = BTreeSet::from(["kept".to_string()]);
        let (p, r, moved) = split(&m, &keep).unwrap();
        assert_eq!(moved, 2, "`moved`, and `tiny`, which only `moved` calls; `helper` is too small for a stub");
        let features = wasmparser::WasmFeatures::default();
        wasmparser::Validator::new_with_features(features).validate_all(&p).unwrap();
        wasmparser::Validator::new_with_features(features).validate_all(&r).unwrap();

        let first = Module::parse(&p).unwrap();
        assert_eq!(first.tables[0].initial, 2, "the table has a slot for the moved function");
        assert_eq!(first.globals.len(), 2, "and a `$loaded` global");
        // The stub: load the rest unless loaded, then call slot 1.
        let mut ops = first.bodies[1].get_operators_reader().unwrap();
        let mut seen = vec![];
        while !ops.eof() {
            seen.push(format!("{:?}", ops.read().unwrap()));
        }
        assert_eq!(
            seen,
            [
                "GlobalGet { global_index: 1 }",
                "I32Eqz",
                "If { blockty: Empty }",
                "I32Const { value: 1 }",
                "Call { function_index: 0 }",
                "End",
                "LocalGet { local_index: 0 }",
                "LocalGet { local_index: 1 }",
                "I32Const { value: 1 }",
                "CallIndirect { type_index: 1, table_index: 0 }",
                "End"
            ]
        );
        assert_eq!(first.body_bytes(0), m.body_bytes(0), "a kept function is copied as it was");
        assert_eq!(first.body_bytes(3), m.body_bytes(3), "and so is one too small for a stub");
        assert_eq!(first.body_bytes(2), [0, 0x00, 0x0b], "what only the rest calls leaves `unreachable` behind");

        // The rest imports the table, the memory and both globals, and puts `moved` in slot
        // 1; its start function sets `$loaded`.
        let rest = Module::parse(&r).unwrap();
        assert_eq!(rest.func_imports, 0);
        assert_eq!(rest.globals.len(), 2);
        assert_eq!(rest.bodies.len(), 3);
        assert_eq!(rest.start, Some(2));
        assert_eq!(rest.named_outside, BTreeSet::from([0]), "the element segment names `moved`");
        let mut exports = vec![];
        for payload in Parser::new(0).parse_all(&p) {
            if let Payload::ExportSection(s) = payload.unwrap() {
                exports.extend(s.into_iter().map(|e| e.unwrap().name.to_string()));
            }
        }
        assert_eq!(exports, ["$g0", "$g1", "$t0", "$m0"]);
    }

    #[test]
    fn the_page_must_import_the_loader() {
        let mut data = page();
        let at = data.windows(16).position(|w| w == b"kubeloopLoadRest").unwrap();
        data[at..at + 16].copy_from_slice(b"somethingElse!!!");
        let m = Module::parse(&data).unwrap();
        let err = split(&m, &BTreeSet::new()).err().unwrap();
        assert!(err.to_string().contains("does not import kubeloopLoadRest"), "{err}");
    }

    #[test]
    fn marks_each_stretch_and_reports_what_did_not_run() {
        // `kept` is straight-line code; give it a branch: `if` ... `end` in the middle.
        let mut m = Out::new();
        let mut types = TypeSection::new();
        types.ty().function([ValType::I32], []);
        m.section(&types);
        let mut funcs = FunctionSection::new();
        funcs.function(0);
        m.section(&funcs);
        let mut memories = MemorySection::new();
        memories.memory(MemoryType { minimum: 1, maximum: None, memory64: false, shared: false, page_size_log2: None });
        m.section(&memories);
        let mut code = CodeSection::new();
        let mut f = Function::new([]);
        f.instruction(&Instruction::LocalGet(0))
            .instruction(&Instruction::If(wasm_encoder::BlockType::Empty))
            .instruction(&Instruction::LocalGet(0))
            .instruction(&Instruction::Drop)
            .instruction(&Instruction::End)
            .instruction(&Instruction::End);
        code.function(&f);
        m.section(&code);
        let mut names = NameSection::new();
        let mut map = NameMap::new();
        map.append(0, "branchy");
        names.functions(&map);
        m.section(&names);
        let data = m.finish();
        let module = Module::parse(&data).unwrap();
        let points = mark_points(&module.bodies[0]).unwrap();
        assert_eq!(points.len(), 3, "the start, inside the `if`, and after its `end`");
        let marked = instrument(&module, true).unwrap();
        let mut features = wasmparser::WasmFeatures::default();
        features.insert(wasmparser::WasmFeatures::MULTI_MEMORY);
        wasmparser::Validator::new_with_features(features).validate_all(&marked).unwrap();
        // A run that never took the branch: the `if`'s body is cold.
        let report = cold(&module, &[1, 0, 1], 10).unwrap();
        assert!(report.starts_with("1 functions ran:"), "{report}");
        let row = report.lines().nth(1).unwrap();
        let cold_bytes: usize = row.split_whitespace().next().unwrap().parse().unwrap();
        assert_eq!(cold_bytes, 4, "local.get 0 (two bytes), drop, end: {report}");
        assert!(row.ends_with("branchy"));
        // A run that never called it reports nothing.
        assert!(cold(&module, &[0, 0, 0], 10).unwrap().starts_with("0 functions ran"));
        let stretches = cold_stretches(&module, &[1, 0, 1], "branchy").unwrap();
        assert_eq!(stretches.lines().filter(|l| l.trim_start().starts_with("cold")).count(), 1, "{stretches}");
    }
}
