//! One condition of a rule: `field op number` or `field op field [+|- number]`.

use super::summary::{self, KernelSummary};

/// `op` of a condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

/// The right-hand side of a condition.
#[derive(Debug, Clone, PartialEq)]
enum Rhs {
    Number(f64),
    Field(String, f64),
}

/// One parsed condition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Condition {
    pub(crate) text: String,
    field: String,
    op: Op,
    rhs: Rhs,
}

impl Condition {
    pub(crate) fn parse(text: &str) -> Result<Condition, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let (field, op, rest) = match words.as_slice() {
            [field, op, rest @ ..] if !rest.is_empty() => (*field, *op, rest),
            _ => return Err("expected `field op value`, e.g. `dram_throughput_pct >= 60`".into()),
        };
        let op = match op {
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            other => return Err(format!("unknown operator `{other}` (use <, <=, > or >=)")),
        };
        check_field(field)?;
        let rhs = match rest {
            [n] => match n.parse::<f64>() {
                Ok(v) => Rhs::Number(v),
                Err(_) => {
                    check_field(n)?;
                    Rhs::Field(n.to_string(), 0.0)
                }
            },
            [other, sign @ ("+" | "-"), n] => {
                check_field(other)?;
                let v: f64 = n.parse().map_err(|_| format!("`{n}` is not a number"))?;
                Rhs::Field(other.to_string(), if *sign == "-" { -v } else { v })
            }
            _ => return Err("the right side must be a number, a field, or `field + number`".into()),
        };
        Ok(Condition { text: text.to_string(), field: field.to_string(), op, rhs })
    }

    /// `Some(true/false)`, or `None` when a field it reads was not collected.
    pub(crate) fn eval(&self, s: &KernelSummary) -> Option<bool> {
        let lhs = s.get(&self.field)?;
        let rhs = match &self.rhs {
            Rhs::Number(v) => *v,
            Rhs::Field(f, offset) => s.get(f)? + offset,
        };
        Some(match self.op {
            Op::Lt => lhs < rhs,
            Op::Le => lhs <= rhs,
            Op::Gt => lhs > rhs,
            Op::Ge => lhs >= rhs,
        })
    }

    pub(crate) fn fields(&self) -> Vec<&str> {
        let mut f = vec![self.field.as_str()];
        if let Rhs::Field(other, _) = &self.rhs {
            f.push(other);
        }
        f
    }
}

pub(super) fn check_field(name: &str) -> Result<(), String> {
    if summary::field_names().contains(&name) {
        Ok(())
    } else {
        Err(format!("unknown field `{name}`; fields are: {}", summary::field_names().join(", ")))
    }
}
