//! Running independent build steps on every core.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` applied to every item, on as many threads as there are cores (at most one per item);
/// the results in the order of `items`. Threads take the next unstarted item, so long and
/// short steps balance.
pub fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let result = f(item);
                    *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .expect("every item was processed")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_the_order_of_the_items() {
        let items: Vec<u32> = (0..100).collect();
        assert_eq!(
            super::parallel_map(&items, |x| x * 2),
            (0..100).map(|x| x * 2).collect::<Vec<_>>()
        );
        assert!(super::parallel_map(&[] as &[u32], |x| *x).is_empty());
    }
}
