//! Resource quantities (`500m`, `2`, `128Mi`, `1e3`), after
//! `k8s.io/apimachinery/pkg/api/resource/quantity.go`, held as integer milli-units so that
//! scheduling arithmetic is exact.
//!
//! [`parse`] accepts exactly what `resource.ParseQuantity` accepts (the grammar of
//! `parseQuantityString`, the suffixes of `suffix.go`, and its fast and `inf.Dec` paths,
//! down to which digit-less inputs they let through) and never panics, overflows or takes
//! more than linear time. Upstream's `Quantity` is arbitrary-precision; here a value is
//! reduced to milli-units, rounded up in magnitude as upstream rounds to its smallest
//! unit, and **saturated** at `i64::MAX` (`i64::MIN + 1` for negatives) when it does not
//! fit. `1E` (10^21 milli-units) and `1e1000` therefore parse, to `i64::MAX` with
//! [`Quantity::saturated`] set. Upstream's `MilliValue()` silently wraps such values;
//! saturating keeps them ordered above every representable one.

use crate::foundation::value::Value;

/// `ErrFormatWrong`, `ErrNumeric` and `ErrSuffix` of `quantity.go`, with their messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantityError {
    FormatWrong,
    Numeric,
    Suffix,
}

impl std::fmt::Display for QuantityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            QuantityError::FormatWrong => "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            QuantityError::Numeric => "unable to parse numeric part of quantity",
            QuantityError::Suffix => "unable to parse quantity's suffix",
        })
    }
}

/// A parsed quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    /// The value in milli-units, rounded up in magnitude (`0.1m` -> 1, `-0.1m` -> -1) and
    /// saturated at `i64::MAX` / `-i64::MAX`.
    pub milli: i64,
    /// `milli` was saturated: the value's magnitude is beyond `i64::MAX` milli-units.
    pub saturated: bool,
    /// The suffix was binary (`Ki` ... `Ei`): upstream's `BinarySI` format.
    pub binary: bool,
}

impl Quantity {
    /// Whether the value is below zero (`ValidateNonnegativeQuantity`).
    pub fn is_negative(&self) -> bool {
        self.milli < 0
    }
}

/// `parseQuantityString`: sign, number and suffix, as byte ranges of the input. `value`
/// is the signed number as written (what `inf.Dec.SetString` later reads).
struct Parts<'a> {
    positive: bool,
    value: &'a [u8],
    num: &'a [u8],
    denom: &'a [u8],
    suffix: &'a [u8],
}

fn split(s: &[u8]) -> Result<Parts<'_>, QuantityError> {
    let end = s.len();
    let mut p = Parts { positive: true, value: &[], num: &[], denom: &[], suffix: &[] };
    let mut pos = 0;
    if pos < end {
        match s[0] {
            b'-' => {
                p.positive = false;
                pos += 1;
            }
            b'+' => pos += 1,
            _ => {}
        }
    }
    // Leading zeros; a string of nothing else is zero.
    while pos < end && s[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        p.num = b"0";
        p.value = b"0";
        return Ok(p);
    }
    let start = pos;
    while pos < end && s[pos].is_ascii_digit() {
        pos += 1;
    }
    p.num = &s[start..pos];
    if pos >= end {
        p.value = s;
        return Ok(p);
    }
    if p.num.is_empty() {
        p.num = b"0";
    }
    if s[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && s[pos].is_ascii_digit() {
            pos += 1;
        }
        p.denom = &s[start..pos];
        if pos >= end {
            p.value = s;
            return Ok(p);
        }
    }
    p.value = &s[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&s[pos]) {
        pos += 1;
    }
    if pos < end && matches!(s[pos], b'-' | b'+') {
        pos += 1;
    }
    while pos < end && s[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        // A character that fits nowhere in `<number><suffix>`.
        return Err(QuantityError::FormatWrong);
    }
    p.suffix = &s[suffix_start..];
    Ok(p)
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    DecimalSI,
    BinarySI,
    DecimalExponent,
}

/// `quantitySuffixer.interpret`: (base, exponent, format).
fn interpret(suffix: &[u8]) -> Option<(u32, i32, Format)> {
    let dec = |e| Some((10, e, Format::DecimalSI));
    let bin = |e| Some((2, e, Format::BinarySI));
    match suffix {
        b"" => dec(0),
        b"n" => dec(-9),
        b"u" => dec(-6),
        b"m" => dec(-3),
        b"k" => dec(3),
        b"M" => dec(6),
        b"G" => dec(9),
        b"T" => dec(12),
        b"P" => dec(15),
        b"E" => dec(18),
        b"Ki" => bin(10),
        b"Mi" => bin(20),
        b"Gi" => bin(30),
        b"Ti" => bin(40),
        b"Pi" => bin(50),
        b"Ei" => bin(60),
        [b'e' | b'E', rest @ ..] if !rest.is_empty() => {
            // strconv.ParseInt(s[1:], 10, 64), then int32(parsed): Go truncates.
            let parsed: i64 = std::str::from_utf8(rest).ok()?.parse().ok()?;
            Some((10, parsed as i32, Format::DecimalExponent))
        }
        _ => None,
    }
}

/// `ParseQuantity(str)`: the quantity `str` denotes, or upstream's error for it. No
/// surrounding whitespace is allowed (see [`parse_milli`] for JSON's trimming).
pub fn parse(str: &str) -> Result<Quantity, QuantityError> {
    let s = str.as_bytes();
    if s.is_empty() {
        return Err(QuantityError::FormatWrong);
    }
    if s == b"0" {
        return Ok(Quantity { milli: 0, saturated: false, binary: false });
    }
    let p = split(s)?;
    let (base, exponent, format) = interpret(p.suffix).ok_or(QuantityError::Suffix)?;
    // Go's int32(len(...)); the arithmetic below wraps as Go's int32 does.
    let len_denom = p.denom.len() as i32;
    let digits = p.num.len().saturating_add(p.denom.len());
    // The int64 fast path of ParseQuantity: it reads num+denom with ParseInt and never
    // looks at `value`, so "e3" or "Gi" (no digits at all) pass as zero there.
    let precision: i64 = match format {
        Format::DecimalSI | Format::DecimalExponent => 18 - digits as i64,
        Format::BinarySI if p.denom.is_empty() => 15 - p.num.len() as i64 - (exponent as i64 * 3 / 10) - 1,
        Format::BinarySI => -1,
    };
    let fast_scale = if base == 10 { exponent.wrapping_sub(len_denom) } else { 0i32.wrapping_sub(len_denom) };
    let fast = precision >= 0 && fast_scale >= -9 && {
        // At most 18 digits: ParseInt cannot fail; int64Multiply by 2^exponent can.
        let value: u128 = p.num.iter().chain(p.denom).fold(0u128, |acc, d| acc * 10 + u128::from(d - b'0'));
        let mantissa: u128 = if base == 2 { 1u128 << exponent } else { 1 };
        value * mantissa <= i64::MAX as u128
    };
    let (e10, exp2) = if fast {
        (i64::from(fast_scale), if base == 2 { exponent as u32 } else { 0 })
    } else {
        // The inf.Dec path: SetString(value) needs at least one digit.
        if !p.value.iter().any(u8::is_ascii_digit) {
            return Err(QuantityError::Numeric);
        }
        if base == 10 {
            // amount.SetScale(len(denom) + -exponent), in int32.
            (-i64::from(len_denom.wrapping_add(exponent.wrapping_neg())), 0)
        } else {
            (-i64::from(len_denom), exponent as u32)
        }
    };
    let (magnitude, saturated) = ceil_milli(p.num, p.denom, exp2, e10);
    let milli = if p.positive { magnitude } else { -magnitude };
    Ok(Quantity { milli, saturated, binary: format == Format::BinarySI })
}

/// ceil(digits * 2^exp2 * 10^(e10 + 3)) for the decimal digits `num` ++ `denom`,
/// saturated at `i64::MAX`: linear in the number of digits, whatever the exponents.
fn ceil_milli(num: &[u8], denom: &[u8], exp2: u32, e10: i64) -> (i64, bool) {
    let all: Vec<u8> = num.iter().chain(denom).map(|d| d - b'0').skip_while(|&d| d == 0).collect();
    if all.is_empty() {
        return (0, false);
    }
    // Multiply by 2^exp2 (exp2 <= 60), least significant digit first.
    let digits: Vec<u8> = if exp2 == 0 {
        all
    } else {
        let m = 1u128 << exp2;
        let mut out = Vec::with_capacity(all.len() + 19);
        let mut carry = 0u128;
        for &d in all.iter().rev() {
            let cur = u128::from(d) * m + carry;
            out.push((cur % 10) as u8);
            carry = cur / 10;
        }
        while carry > 0 {
            out.push((carry % 10) as u8);
            carry /= 10;
        }
        while out.last() == Some(&0) {
            out.pop();
        }
        out.reverse();
        out
    };
    // Digits before the decimal point of the milli value.
    let int_len = digits.len() as i64 + e10.saturating_add(3);
    if int_len <= 0 {
        // A non-zero fraction of one milli-unit rounds up to one.
        return (1, false);
    }
    if int_len > 19 {
        return (i64::MAX, true);
    }
    let int_len = int_len as usize;
    let mut v: u64 = 0;
    for i in 0..int_len {
        v = v * 10 + u64::from(digits.get(i).copied().unwrap_or(0));
    }
    if digits.get(int_len..).is_some_and(|frac| frac.iter().any(|&d| d != 0)) {
        v += 1;
    }
    match i64::try_from(v) {
        Ok(v) => (v, false),
        Err(_) => (i64::MAX, true),
    }
}

/// Parse a quantity to milli-units (`"250m"` -> 250, `"1Gi"` -> 1073741824000), as the
/// API server reads one from JSON (`Quantity.UnmarshalJSON` trims surrounding
/// whitespace first). Values beyond `i64` milli-units saturate (see the module docs).
pub fn parse_milli(s: &str) -> Option<i64> {
    parse(s.trim()).ok().map(|q| q.milli)
}

/// A quantity from JSON: strings as above, numbers through their JSON text, as
/// `UnmarshalJSON` parses the raw number.
pub fn value_milli(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => parse_milli(s),
        Value::Number(n) => parse_milli(&n.to_string()),
        _ => None,
    }
}

/// Render milli-cpu the way `kubectl describe` prints requests (`250m`, `2`).
pub fn format_cpu(milli: i64) -> String {
    if milli % 1000 == 0 {
        format!("{}", milli / 1000)
    } else {
        format!("{milli}m")
    }
}

/// Render bytes (given in milli-units) with the largest exact binary suffix.
pub fn format_bytes(milli: i64) -> String {
    let b = milli / 1000;
    for (suffix, f) in [("Ti", 1i64 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
        if b != 0 && b % f == 0 {
            return format!("{}{}", b / f, suffix);
        }
    }
    b.to_string()
}

/// A quantity in Kubernetes' canonical form, as the API server serialises it and kubectl
/// prints it: binary suffixes stay binary with the largest exact suffix (`8388608Ki` ->
/// `8Gi`), decimal ones take the largest exact decimal suffix (`1000` -> `1k`, `0.5` ->
/// `500m`). Text that is not a quantity, or one too large for exact milli-units, is returned
/// unchanged.
pub fn canonical(s: &str) -> String {
    // A saturated value has no exact milli form: keep the text (`1E` stays `1E`).
    let Some(milli) = parse(s.trim()).ok().filter(|q| !q.saturated).map(|q| q.milli) else { return s.to_string() };
    if s.trim_end().ends_with('i') && milli % 1000 == 0 {
        return format_bytes(milli);
    }
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let units = milli / 1000;
    for (suffix, f) in
        [("E", 1_000_000_000_000_000_000i64), ("P", 1_000_000_000_000_000), ("T", 1_000_000_000_000), ("G", 1_000_000_000), ("M", 1_000_000), ("k", 1000)]
    {
        if units != 0 && units % f == 0 {
            return format!("{}{suffix}", units / f);
        }
    }
    units.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_forms() {
        assert_eq!(parse_milli("250m"), Some(250));
        assert_eq!(parse_milli("2"), Some(2000));
        assert_eq!(parse_milli("0.5"), Some(500));
        assert_eq!(parse_milli("128Mi"), Some(128 * 1024 * 1024 * 1000));
        assert_eq!(parse_milli("1G"), Some(1_000_000_000_000));
        assert_eq!(parse_milli("1e3"), Some(1_000_000));
        assert_eq!(parse_milli("abc"), None);
        assert_eq!(parse_milli("1.2.3"), None);
        assert_eq!(value_milli(&crate::json!(2)), Some(2000));
    }

    #[test]
    fn formats_back() {
        assert_eq!(format_cpu(250), "250m");
        assert_eq!(format_cpu(4000), "4");
        assert_eq!(format_bytes(parse_milli("8Gi").unwrap()), "8Gi");
        assert_eq!(format_bytes(parse_milli("100Mi").unwrap()), "100Mi");
        assert_eq!(canonical("8388608Ki"), "8Gi");
        assert_eq!(canonical("8286208Ki"), "8092Mi");
        assert_eq!(canonical("92160Mi"), "90Gi");
        assert_eq!(canonical("4"), "4");
        assert_eq!(canonical("0.5"), "500m");
        assert_eq!(canonical("1000"), "1k");
        assert_eq!(canonical("0"), "0");
    }

    /// The accepted table of `TestQuantityParse` (apimachinery
    /// `pkg/api/resource/quantity_test.go`), with the value each `decQuantity` there
    /// stands for turned into milli-units (`SAT`: beyond `i64`, saturated). Like the
    /// upstream test, every entry is also parsed with a `-` and a `+` in front.
    #[test]
    fn parse_quantity_accepts_upstream_table() {
        const SAT: i64 = i64::MAX;
        let table: &[(&str, i64)] = &[
            ("0", 0),
            ("0n", 0),
            ("0u", 0),
            ("0m", 0),
            ("0Ki", 0),
            ("0k", 0),
            ("0Mi", 0),
            ("0M", 0),
            ("0Gi", 0),
            ("0G", 0),
            ("0Ti", 0),
            ("0T", 0),
            ("1", 1000),
            ("1Ki", 1024000),
            ("8Ki", 8192000),
            ("7Mi", 7340032000),
            ("6Gi", 6442450944000),
            ("5Ti", 5497558138880000),
            ("4Pi", 4503599627370496000),
            ("3Ei", SAT),
            ("10Ti", 10995116277760000),
            ("100Ti", 109951162777600000),
            ("5n", 1),
            ("4u", 1),
            ("3m", 3),
            ("9", 9000),
            ("8k", 8000000),
            ("50k", 50000000),
            ("7M", 7000000000),
            ("6G", 6000000000000),
            ("5T", 5000000000000000),
            ("40T", 40000000000000000),
            ("300T", 300000000000000000),
            ("2P", 2000000000000000000),
            ("1E", SAT),
            ("1E-3", 1),
            ("1e3", 1000000),
            ("1E6", 1000000000),
            ("1e9", 1000000000000),
            ("1E12", 1000000000000000),
            ("1e15", 1000000000000000000),
            ("1E18", SAT),
            ("1e14", 100000000000000000),
            ("1e13", 10000000000000000),
            ("100.035k", 100035000),
            ("0.001", 1),
            ("0.0005k", 500),
            ("0.005", 5),
            ("0.05", 50),
            ("0.5", 500),
            ("0.00050k", 500),
            ("0.00500", 5),
            ("0.05000", 50),
            ("0.50000", 500),
            ("0.5e0", 500),
            ("0.5e-1", 50),
            ("0.5e-2", 5),
            ("10.035M", 10035000000),
            ("1.2e3", 1200000),
            ("1.3E+6", 1300000000),
            ("1.40e9", 1400000000000),
            ("1.53E12", 1530000000000000),
            ("1.6e15", 1600000000000000000),
            ("1.7E18", SAT),
            ("9.01", 9010),
            ("8.1k", 8100000),
            ("7.123456M", 7123456000),
            ("6.987654321G", 6987654321000),
            ("5.444T", 5444000000000000),
            ("40.1T", 40100000000000000),
            ("300.2T", 300200000000000000),
            ("2.5P", 2500000000000000000),
            ("1.01E", SAT),
            ("3.001n", 1),
            ("1.1E-9", 1),
            ("0.0000000001", 1),
            ("0.0000000005", 1),
            ("0.00000000050", 1),
            ("0.5e-9", 1),
            ("0.9n", 1),
            ("0.00000012345", 1),
            ("0.00000012354", 1),
            ("9Ei", SAT),
            ("9223372036854775807Ki", SAT),
            ("12E", SAT),
            ("100.035Ki", 102435840),
            ("0.5Mi", 524288000),
            ("0.05Gi", 53687091200),
            ("0.025Ti", 27487790694400),
            ("0.000000000001Ki", 1),
            (".001", 1),
            (".0001k", 100),
            ("1.", 1000),
            ("1.G", 1000000000000),
        ];
        for &(input, want) in table {
            for (prefix, sign) in [("", 1), ("-", -1), ("+", 1)] {
                let text = format!("{prefix}{input}");
                let q = parse(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
                assert_eq!(q.milli, sign * want, "{text:?}");
                assert_eq!(q.saturated, want == SAT, "{text:?}");
            }
        }
        // TestParseQuantityString: a lone point, signed or not, is zero.
        for zero in [".", "-.", "+", "-", "e3", "Gi"] {
            assert_eq!(parse(zero), Ok(Quantity { milli: 0, saturated: false, binary: zero == "Gi" }), "{zero:?}");
        }
    }

    /// The `invalid` list of `TestQuantityParse` (quantity_test.go), with the error each
    /// one gets from `ParseQuantity`, and more found by reading `parseQuantityString`,
    /// `suffixHandler.interpret` and the `inf.Dec` path.
    #[test]
    fn parse_quantity_rejects_upstream_invalid_list() {
        use QuantityError::*;
        for (input, err) in [
            ("1.1.M", FormatWrong),
            ("1+1.0M", FormatWrong),
            ("0.1mi", Suffix),
            ("0.1am", FormatWrong),
            ("aoeu", FormatWrong),
            (".5i", Suffix),
            ("1i", Suffix),
            ("-3.01i", Suffix),
            ("-3.01e-", Suffix),
            // trailing whitespace is forbidden
            (" 1", FormatWrong),
            ("1 ", FormatWrong),
            ("", FormatWrong),
            ("Non-Numeric", FormatWrong),
            ("1K", Suffix),
            ("1e", Suffix),
            ("1Mi5", Suffix),
            ("1e9223372036854775808", Suffix),
            // No digits, and too big for the int64 fast path: `inf.Dec` cannot read "".
            ("Ei", Numeric),
            ("-e-20", Numeric),
        ] {
            assert_eq!(parse(input), Err(err), "{input:?}");
        }
        assert_eq!(QuantityError::Suffix.to_string(), "unable to parse quantity's suffix");
    }

    /// Values `ParseQuantity` accepts whatever their size: they saturate here, in linear
    /// time, instead of overflowing (`1e18`, `1E`, `1Ei` are the reported cases).
    #[test]
    fn huge_and_tiny_quantities_saturate_or_round_up() {
        for s in ["1E", "1Ei", "1e18", "1e1000", "9Ei", "1e-2147483648"] {
            let q = parse(s).unwrap();
            assert!(q.saturated && q.milli == i64::MAX, "{s:?}");
            assert_eq!(parse_milli(s), Some(i64::MAX));
            assert_eq!(parse_milli(&format!("-{s}")), Some(-i64::MAX));
            assert_eq!(canonical(s), s, "a saturated value keeps its text");
        }
        assert_eq!(parse_milli("1e-1000"), Some(1));
        assert_eq!(parse_milli("-1e-1000"), Some(-1));
        assert_eq!(parse_milli("0e1000"), Some(0));
        // Go's int32(parsed) truncation of the exponent.
        assert_eq!(parse_milli("1e4294967296"), Some(1000));
        assert_eq!(parse_milli("9223372036854775807m"), Some(i64::MAX));
        assert!(!parse("9223372036854775807m").unwrap().saturated);
        assert!(parse("9223372036854775808m").unwrap().saturated);
        let long = "1".repeat(1 << 20);
        assert_eq!(parse_milli(&long), Some(i64::MAX));
        let small = format!("0.{}1", "0".repeat(1 << 20));
        assert_eq!(parse_milli(&small), Some(1));
        assert_eq!(parse_milli(&format!("{}Ki", "7".repeat(1 << 20))), Some(i64::MAX));
        // JSON numbers are read from their text, as UnmarshalJSON does.
        assert_eq!(value_milli(&crate::json!(1e21)), Some(i64::MAX));
        assert_eq!(value_milli(&crate::json!(-0.0001)), Some(-1));
        // UnmarshalJSON trims the string before ParseQuantity.
        assert_eq!(parse_milli(" 1 "), Some(1000));
    }
}
