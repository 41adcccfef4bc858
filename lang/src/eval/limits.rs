//! The evaluator's bounds: depth, steps, the bytes of lists, sets and strings it
//! makes, and its host's cancel flag, each ending in a diagnostic (E028, E043,
//! E046) that names what ran away. Counts only; must not evaluate anything.

use std::mem::size_of;

use super::{DEFAULT_MAX_DEPTH, Machine, error};
use crate::codes;
use crate::diagnostic::Diagnostic;
use crate::span::Span;
use crate::value::{Attr, EvalResult, Value};

/// Limits that keep evaluation bounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Nested evaluation steps (calls, forces, sub-expressions) before giving up.
    pub max_depth: usize,
    /// Total evaluation steps before giving up; None is unlimited.
    pub max_steps: Option<u64>,
    /// Bytes of lists, sets and strings one evaluation may make in all (each counted
    /// when made and never given back; only an interpolation that fails gives back
    /// its string parts, since it makes no string), so that no request can make the
    /// allocator fail; None is unlimited.
    pub max_memory: Option<u64>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_depth: DEFAULT_MAX_DEPTH,
            max_steps: Some(DEFAULT_MAX_STEPS),
            max_memory: Some(DEFAULT_MAX_MEMORY),
        }
    }
}

/// Steps an evaluation may take by default: about half a minute of work, two hundred
/// times what a 5,000-node fleet takes (a step is a call, a force or an element made).
pub const DEFAULT_MAX_STEPS: u64 = 1_000_000_000;

/// Bytes of lists, sets and strings an evaluation may make by default: 4 GiB.
pub const DEFAULT_MAX_MEMORY: u64 = 4 << 30;

/// How often (in steps) a cancelled evaluation notices: about a millisecond.
const CANCEL_CHECK_STEPS: u64 = 1 << 15;

impl Machine {
    /// One nested step: one more level of depth and one step of the budget. The
    /// common case is two increments and two comparisons; the budget and the cancel
    /// flag are looked at only when the steps reach `step_check`.
    #[inline]
    pub(crate) fn enter(&mut self, span: Span) -> EvalResult<()> {
        self.depth += 1;
        self.steps += 1;
        if self.depth > self.limits.max_depth || self.steps >= self.step_check {
            return self.enter_checked(span);
        }
        Ok(())
    }

    /// [`Machine::enter`] past its fast path: the depth bound, the step budget, the
    /// cancel flag, then the next step count worth a look.
    #[cold]
    #[inline(never)]
    fn enter_checked(&mut self, span: Span) -> EvalResult<()> {
        if self.depth > self.limits.max_depth {
            self.depth -= 1;
            self.steps -= 1;
            return Err(self.too_deep(span));
        }
        if let Some(max_steps) = self.limits.max_steps
            && self.steps > max_steps
        {
            self.depth -= 1;
            return Err(self.budget_exceeded(max_steps, span));
        }
        if self.is_cancelled() {
            self.depth -= 1;
            return Err(self.budget_exceeded(self.steps, span));
        }
        let next_cancel_check = (self.steps / CANCEL_CHECK_STEPS + 1) * CANCEL_CHECK_STEPS;
        let past_budget = self
            .limits
            .max_steps
            .map_or(u64::MAX, |max_steps| max_steps.saturating_add(1));
        self.step_check = next_cancel_check.min(past_budget);
        Ok(())
    }

    #[cold]
    fn is_cancelled(&self) -> bool {
        self.cancelled
            .as_ref()
            .is_some_and(|flag| flag.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Counts `units` steps of work a builtin or operator does at once (elements it
    /// makes or copies), so that a step budget also bounds big lists, sets and
    /// strings made without many calls (`genList f 1000000000`, `++` in a loop).
    #[inline]
    pub(crate) fn charge(&mut self, units: usize, span: Span) -> EvalResult<()> {
        self.steps = self.steps.saturating_add(units as u64);
        if let Some(max_steps) = self.limits.max_steps
            && self.steps > max_steps
        {
            return Err(self.budget_exceeded(max_steps, span));
        }
        Ok(())
    }

    /// Counts `bytes` a builtin or operator is about to allocate against the memory
    /// bound, refusing (before anything is allocated) what would pass it.
    #[inline]
    pub(crate) fn allocate(&mut self, bytes: usize, span: Span) -> EvalResult<()> {
        let total = self.memory.saturating_add(bytes as u64);
        if let Some(max_memory) = self.limits.max_memory
            && total > max_memory
        {
            return Err(self.memory_exceeded(Some(max_memory), bytes, span));
        }
        self.memory = total;
        Ok(())
    }

    /// Takes back `bytes` counted by [`Machine::allocate`] for what was not made
    /// after all (a string one of whose later parts failed).
    pub(crate) fn give_back(&mut self, bytes: usize) {
        self.memory = self.memory.saturating_sub(bytes as u64);
    }

    /// [`Machine::allocate`] and [`Machine::charge`] for a list of `elements` made at
    /// once.
    pub(crate) fn make_list(&mut self, elements: usize, span: Span) -> EvalResult<()> {
        self.allocate(elements.saturating_mul(LIST_ELEMENT_BYTES), span)?;
        self.charge(elements, span)
    }

    /// An empty vector with room for `elements` values, or E046 if the allocator
    /// cannot give it (with a memory bound raised past what the machine has).
    pub(crate) fn list_buffer(&self, elements: usize, span: Span) -> EvalResult<Vec<Value>> {
        let mut buffer = Vec::new();
        match buffer.try_reserve_exact(elements) {
            Ok(()) => Ok(buffer),
            Err(_) => {
                Err(self.memory_exceeded(None, elements.saturating_mul(LIST_ELEMENT_BYTES), span))
            }
        }
    }

    /// How many bytes the memory bound leaves (`usize::MAX` without one): what a
    /// buffer written as it grows may reach before it is counted.
    pub(crate) fn memory_left(&self) -> usize {
        self.limits.max_memory.map_or(usize::MAX, |max_memory| {
            usize::try_from(max_memory.saturating_sub(self.memory)).unwrap_or(usize::MAX)
        })
    }

    /// E046 for a buffer written as it grows that would pass the memory bound
    /// (`bytes` more than [`Machine::memory_left`] allowed it).
    pub(crate) fn beyond_memory_bound(&self, bytes: usize, span: Span) -> Box<Diagnostic> {
        self.memory_exceeded(self.limits.max_memory, bytes, span)
    }

    /// E046 for `bytes` the allocator could not give (a buffer that grows as it is
    /// written, whose growth failed before the memory bound was reached).
    pub(crate) fn out_of_memory(&self, bytes: usize, span: Span) -> Box<Diagnostic> {
        self.memory_exceeded(None, bytes, span)
    }

    /// Room for `bytes` more at the end of `out`, a buffer written as it grows, or
    /// E046 if the allocator cannot give it: growth by doubling asks for as much
    /// again as the buffer holds, past what the memory bound counted, and a failed
    /// growth ended the process.
    pub(crate) fn room(&self, out: &mut Vec<u8>, bytes: usize, span: Span) -> EvalResult<()> {
        out.try_reserve(bytes)
            .map_err(|_| self.out_of_memory(bytes, span))
    }

    /// [`Machine::allocate`] and [`Machine::charge`] for a set of `entries`.
    pub(crate) fn make_attrs(&mut self, entries: usize, span: Span) -> EvalResult<()> {
        self.allocate(entries.saturating_mul(ATTR_ENTRY_BYTES), span)?;
        self.charge(entries, span)
    }

    /// [`Machine::allocate`] and [`Machine::charge`] for a string of `bytes`.
    pub(crate) fn make_string(&mut self, bytes: usize, span: Span) -> EvalResult<()> {
        self.allocate(bytes, span)?;
        self.charge(bytes / BYTES_PER_STEP, span)
    }

    /// [`Machine::make_string`] for the bytes of `value`, coerced and appended to
    /// `out` (`more` and `to_store` as [`Machine::coerce_to_string_into`] takes
    /// them). A string's bytes are counted before they are written: a string
    /// doubled in a loop is refused before its copy is made, not after.
    pub(crate) fn append_counted(
        &mut self,
        value: &Value,
        span: Span,
        (more, to_store): (bool, bool),
        out: &mut Vec<u8>,
    ) -> EvalResult<()> {
        let value = self.force(value, span)?;
        if let Value::String(text) = &value {
            self.allocate(text.len(), span)?;
            out.extend_from_slice(text);
            return self.charge(text.len() / BYTES_PER_STEP, span);
        }
        let before = out.len();
        self.coerce_to_string_into(&value, span, more, to_store, out)?;
        self.make_string(out.len() - before, span)
    }

    /// [`Machine::charge`] for a string of `bytes`, steps only: one written out and
    /// not kept (the value `meshc eval` prints as it goes), or one whose bytes were
    /// counted against the memory bound as they were written.
    pub(crate) fn write_string(&mut self, bytes: usize, span: Span) -> EvalResult<()> {
        self.charge(bytes / BYTES_PER_STEP, span)
    }

    /// Steps taken and bytes counted so far (what `meshc` reports when asked).
    pub fn usage(&self) -> (u64, u64) {
        (self.steps, self.memory)
    }

    /// The innermost binding being evaluated, if it has a name: what ran away.
    fn innermost_binding(&self) -> Option<String> {
        self.force_stack
            .iter()
            .rev()
            .find_map(|frame| self.binding_names.get(&frame.span))
            .map(|name| String::from_utf8_lossy(name).into_owned())
    }

    #[cold]
    fn budget_exceeded(&self, max_steps: u64, span: Span) -> Box<Diagnostic> {
        let place = match self.innermost_binding() {
            Some(name) => format!(" while evaluating `{name}`"),
            None => String::new(),
        };
        error(
            codes::BUDGET_EXCEEDED,
            format!("evaluation took more than {max_steps} steps{place}"),
            span,
            "still evaluating here",
            "the evaluation may not terminate: look for a function that calls itself without \
             a base case; if it is only big, raise the budget with `--max-steps`",
        )
    }

    #[cold]
    fn memory_exceeded(
        &self,
        max_memory: Option<u64>,
        bytes: usize,
        span: Span,
    ) -> Box<Diagnostic> {
        let place = match self.innermost_binding() {
            Some(name) => format!(" while evaluating `{name}`"),
            None => String::new(),
        };
        let message = match max_memory {
            Some(max_memory) => format!(
                "evaluation would make more than {} of lists, sets and strings{place}",
                describe_bytes(max_memory)
            ),
            None => format!("the machine has no memory left for this list or string{place}"),
        };
        error(
            codes::MEMORY_EXCEEDED,
            message,
            span,
            &format!("this asks for {} more", describe_bytes(bytes as u64)),
            "look for a list or string that grows without end (`genList` with a huge length, \
             doubling in a loop); if it is only big, raise the bound with `--max-memory`",
        )
    }

    #[inline]
    pub(crate) fn leave(&mut self) {
        self.depth -= 1;
    }

    fn too_deep(&self, span: Span) -> Box<Diagnostic> {
        error(
            codes::TOO_DEEP,
            format!(
                "evaluation nested more than {} levels deep",
                self.limits.max_depth
            ),
            span,
            "the limit was reached while evaluating this",
            "this is usually a function that calls itself without reaching a base case; \
             deep recursion over long lists can be rewritten with `builtins.foldl'` or `builtins.genList`",
        )
    }
}

/// Bytes of a string made that count as one step of work (see [`Machine::charge`]).
const BYTES_PER_STEP: usize = 64;

/// What one list element costs, counted against the memory bound: the slot, and
/// the thunk most elements are made as.
const LIST_ELEMENT_BYTES: usize = size_of::<Value>() + 48;

/// What one entry of a set costs, counted against the memory bound.
const ATTR_ENTRY_BYTES: usize = size_of::<Attr>();

/// `4 GiB`, `12 MiB`, `100 bytes`: a size for a message.
pub fn describe_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{} {unit}", bytes / size);
        }
        if bytes >= size * 10 {
            return format!("{:.1} {unit}", bytes as f64 / size as f64);
        }
    }
    format!("{bytes} bytes")
}
