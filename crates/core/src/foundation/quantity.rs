//! Resource quantities (`500m`, `2`, `128Mi`, `1e3`), after
//! `k8s.io/apimachinery/pkg/api/resource/quantity.go`, held as integer milli-units so that
//! scheduling arithmetic is exact.

use crate::foundation::value::Value;

/// Parse a quantity to milli-units (`"250m"` -> 250, `"1Gi"` -> 1073741824000).
pub fn parse_milli(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let (sign, body) = match s.as_bytes()[0] {
        b'-' => (-1i128, &s[1..]),
        b'+' => (1, &s[1..]),
        _ => (1, s),
    };
    let num_end = body.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(body.len());
    let (num, suffix) = body.split_at(num_end);
    if num.is_empty() || num.matches('.').count() > 1 {
        return None;
    }
    let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
    // value = digits / 10^frac_len, in milli-units: * 1000
    let digits: String = format!("{int_part}{frac_part}");
    let mantissa: i128 = if digits.is_empty() { 0 } else { digits.parse().ok()? };
    let frac_len = frac_part.len() as u32;
    let (mul, div): (i128, i128) = match suffix {
        "" => (1000, 1),
        "m" => (1, 1),
        "u" => (1, 1000),
        "n" => (1, 1_000_000),
        "k" => (1_000_000, 1),
        "M" => (1_000_000_000, 1),
        "G" => (1_000_000_000_000, 1),
        "T" => (1_000_000_000_000_000, 1),
        "P" => (1_000_000_000_000_000_000, 1),
        "Ki" => (1024 * 1000, 1),
        "Mi" => (1024 * 1024 * 1000, 1),
        "Gi" => (1024i128.pow(3) * 1000, 1),
        "Ti" => (1024i128.pow(4) * 1000, 1),
        "Pi" => (1024i128.pow(5) * 1000, 1),
        e if e.starts_with(['e', 'E']) => {
            let exp: i32 = e[1..].parse().ok()?;
            if exp >= 0 {
                (1000 * 10i128.checked_pow(exp as u32)?, 1)
            } else {
                (1000, 10i128.checked_pow((-exp) as u32)?)
            }
        }
        _ => return None,
    };
    let denom = div.checked_mul(10i128.checked_pow(frac_len)?)?;
    let num = mantissa.checked_mul(mul)?;
    // Kubernetes rounds up fractional milli-units.
    let v = (num + denom - 1) / denom;
    i64::try_from(sign * v).ok()
}

/// A quantity from JSON: strings as above, numbers as plain units.
pub fn value_milli(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => parse_milli(s),
        Value::Number(n) => n.as_f64().map(|f| (f * 1000.0).ceil() as i64),
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
/// `500m`). Text that is not a quantity is returned unchanged.
pub fn canonical(s: &str) -> String {
    let Some(milli) = parse_milli(s) else { return s.to_string() };
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
}
