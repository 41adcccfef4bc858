//! `builtins.sort`'s order: the steps of the C++ library's `std::stable_sort` (GNU
//! libstdc++, which Nix calls), comparison for comparison. Any stable sort gives the
//! same list for a comparator that is a strict weak order; this one also gives Nix's
//! list for one that is not (`a: b: a != b`, `lessThan` on NaN), calls the
//! comparator on the same pairs in the same order (what `trace` in it prints, which
//! pair's error is raised), and never leaves the list.
//!
//! The algorithm (`__stable_sort` when its temporary buffer could be had; the
//! halves are the same whether the buffer holds the list, as in GCC 12, or half of
//! it, as later): each half is sorted by insertion in chunks of seven, then merged
//! pairwise into the buffer and back, doubling the width; the halves are then
//! merged, forwards from the buffer when the first half is no longer than the
//! second, else backwards. An insertion compares with the chunk's first element and
//! moves there at once if less, or walks back while less than its predecessor
//! (unguarded in C++: the walk ends at the chunk's first element at the latest,
//! being asked the same question again; the bound at the list's start is only a
//! guard).

/// `less(a, b)`: whether `a` goes before `b`; an error ends the sort.
pub(super) fn stable_sort<T: Clone, E>(
    items: &mut [T],
    less: &mut dyn FnMut(&T, &T) -> Result<bool, E>,
) -> Result<(), E> {
    let length = items.len();
    if length == 0 {
        return Ok(());
    }
    let middle = length.div_ceil(2);
    let mut buffer: Vec<T> = items[..middle].to_vec();
    merge_sort_with_buffer(items, 0, middle, &mut buffer, less)?;
    merge_sort_with_buffer(items, middle, length, &mut buffer, less)?;
    let (first, second) = (middle, length - middle);
    if first <= second {
        buffer[..first].clone_from_slice(&items[..middle]);
        merge_forward(items, &buffer[..first], middle, less)
    } else {
        buffer[..second].clone_from_slice(&items[middle..]);
        merge_backward(items, middle, &buffer[..second], less)
    }
}

/// The chunks a range is first sorted in, by insertion.
const CHUNK: usize = 7;

/// `__merge_sort_with_buffer` of `items[start..end]`: chunks sorted by insertion,
/// then runs merged into `buffer` and back, doubling.
fn merge_sort_with_buffer<T: Clone, E>(
    items: &mut [T],
    start: usize,
    end: usize,
    buffer: &mut [T],
    less: &mut dyn FnMut(&T, &T) -> Result<bool, E>,
) -> Result<(), E> {
    let length = end - start;
    let mut chunk = start;
    while end - chunk >= CHUNK {
        insertion_sort(items, chunk, chunk + CHUNK, less)?;
        chunk += CHUNK;
    }
    insertion_sort(items, chunk, end, less)?;
    let mut step = CHUNK;
    while step < length {
        merge_sort_loop(&items[start..end], &mut buffer[..length], step, less)?;
        step *= 2;
        merge_sort_loop(&buffer[..length], &mut items[start..end], step, less)?;
        step *= 2;
    }
    Ok(())
}

/// `__insertion_sort` of `items[start..end]`.
fn insertion_sort<T: Clone, E>(
    items: &mut [T],
    start: usize,
    end: usize,
    less: &mut dyn FnMut(&T, &T) -> Result<bool, E>,
) -> Result<(), E> {
    for index in start + 1..end.min(items.len()) {
        if less(&items[index], &items[start])? {
            items[start..=index].rotate_right(1);
        } else {
            // `__unguarded_linear_insert`
            let value = items[index].clone();
            let mut position = index;
            while position > 0 && less(&value, &items[position - 1])? {
                items[position] = items[position - 1].clone();
                position -= 1;
            }
            items[position] = value;
        }
    }
    Ok(())
}

/// `__merge_sort_loop`: runs of `step` in `from` merged pairwise into `to`.
fn merge_sort_loop<T: Clone, E>(
    from: &[T],
    to: &mut [T],
    step: usize,
    less: &mut dyn FnMut(&T, &T) -> Result<bool, E>,
) -> Result<(), E> {
    let length = from.len();
    let mut first = 0;
    while length - first >= 2 * step {
        move_merge(from, first, first + step, first + 2 * step, to, less)?;
        first += 2 * step;
    }
    let step = step.min(length - first);
    move_merge(from, first, first + step, length, to, less)
}

/// `__move_merge` of `from[start..middle]` and `from[middle..end]` into
/// `to[start..end]`: the right's element first only when it is less.
fn move_merge<T: Clone, E>(
    from: &[T],
    start: usize,
    middle: usize,
    end: usize,
    to: &mut [T],
    less: &mut dyn FnMut(&T, &T) -> Result<bool, E>,
) -> Result<(), E> {
    let (mut left, mut right, mut out) = (start, middle, start);
    while left < middle && right < end {
        if less(&from[right], &from[left])? {
            to[out] = from[right].clone();
            right += 1;
        } else {
            to[out] = from[left].clone();
            left += 1;
        }
        out += 1;
    }
    for index in (left..middle).chain(right..end) {
        to[out] = from[index].clone();
        out += 1;
    }
    Ok(())
}

/// `__move_merge_adaptive`: the first half (in `first`) merged forwards with the
/// second (`items[middle..]`) into `items`.
fn merge_forward<T: Clone, E>(
    items: &mut [T],
    first: &[T],
    middle: usize,
    less: &mut dyn FnMut(&T, &T) -> Result<bool, E>,
) -> Result<(), E> {
    let (mut left, mut right, mut out) = (0, middle, 0);
    while left < first.len() && right < items.len() {
        if less(&items[right], &first[left])? {
            items[out] = items[right].clone();
            right += 1;
        } else {
            items[out] = first[left].clone();
            left += 1;
        }
        out += 1;
    }
    for value in &first[left..] {
        items[out] = value.clone();
        out += 1;
    }
    Ok(())
}

/// `__move_merge_adaptive_backward`: the first half (`items[..middle]`) merged
/// backwards with the second (in `second`) into `items`, from its end.
fn merge_backward<T: Clone, E>(
    items: &mut [T],
    middle: usize,
    second: &[T],
    less: &mut dyn FnMut(&T, &T) -> Result<bool, E>,
) -> Result<(), E> {
    let mut out = items.len();
    if middle == 0 {
        items[out - second.len()..].clone_from_slice(second);
        return Ok(());
    }
    if second.is_empty() {
        return Ok(());
    }
    let (mut left, mut right) = (middle - 1, second.len() - 1);
    loop {
        if less(&second[right], &items[left])? {
            out -= 1;
            items[out] = items[left].clone();
            if left == 0 {
                items[out - (right + 1)..out].clone_from_slice(&second[..=right]);
                return Ok(());
            }
            left -= 1;
        } else {
            out -= 1;
            items[out] = second[right].clone();
            if right == 0 {
                return Ok(());
            }
            right -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::stable_sort;

    fn sorted(items: &[i64], less: impl Fn(i64, i64) -> bool) -> Vec<i64> {
        let mut items = items.to_vec();
        let result: Result<(), ()> = stable_sort(&mut items, &mut |a, b| Ok(less(*a, *b)));
        assert!(result.is_ok());
        items
    }

    /// For a strict weak order it is a stable sort: equal keys keep their order.
    #[test]
    fn an_order_sorts_stably() {
        let items: Vec<i64> = (0..200).map(|i| (i * 7919) % 23 * 1000 + i).collect();
        let by_key = sorted(&items, |a, b| a / 1000 < b / 1000);
        let mut expected = items.clone();
        expected.sort_by_key(|item| item / 1000);
        assert_eq!(by_key, expected);
    }

    /// Nix 2.8's outputs (`nix-instantiate --eval --strict`) for comparators that are
    /// no order, which depend on the steps of the C++ library's algorithm.
    #[test]
    fn a_comparator_that_is_no_order_gives_what_nix_gives() {
        assert_eq!(sorted(&[0, 0, 1, 0], |a, b| a != b), vec![0, 0, 0, 1]);
        assert_eq!(sorted(&[3, 2, 1, 0, 3], |a, b| a != b), vec![3, 0, 1, 2, 3]);
    }

    /// An error of the comparator ends the sort with it.
    #[test]
    fn an_error_ends_the_sort() {
        let mut items = vec![3, 1, 2];
        let result = stable_sort(&mut items, &mut |a: &i64, b: &i64| {
            if *a == 2 || *b == 2 {
                Err("two")
            } else {
                Ok(a < b)
            }
        });
        assert_eq!(result, Err("two"));
    }
}
