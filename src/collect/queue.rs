//! The stage loop, once, for a single kernel and for a batch: a queue of stages, a unit
//! that runs the front one and says what comes next, and nothing else.
//!
//! Every correction a run makes (a window fitted after a miss, a narrower filter, the
//! source page again as SASS only, the stages discovery or basic's metrics choose, a
//! failure) is a [`Next`] value returned by the unit's handler, so the loop cannot grow
//! special cases: the handlers live with the unit ([`super::single`], [`super::batch`]),
//! and the order in which stages run is decided here alone.

use std::collections::VecDeque;

use anyhow::Result;

/// What a stage's handler decided.
#[derive(Debug)]
pub(super) enum Next<S> {
    /// The stage is done; the queue goes on.
    Done,
    /// These stages run after the ones already queued.
    Then(Vec<S>),
    /// This stage runs again first, and the queued stages are rebuilt for what changed
    /// (a fitted window, a narrower filter).
    Requeue(S),
    /// This stage runs again first, the queued ones as they are.
    Retry(S),
    /// The run ends with this error.
    Fail(anyhow::Error),
}

/// What runs the stages of the queue: one kernel, or a batch of kernels.
pub(super) trait Unit {
    /// A queued stage.
    type Stage;

    /// Runs `stage` and says what comes next. An `Err` is an error of kprof's own (a
    /// file it could not write); a stage that failed is [`Next::Fail`].
    fn step(&mut self, stage: Self::Stage) -> Result<Next<Self::Stage>>;

    /// Prepares a queued stage to run with what a [`Next::Requeue`] changed.
    fn rebuild(_stage: &mut Self::Stage) {}
}

/// Runs `first` and whatever their handlers add, in order, until the queue is empty or a
/// stage fails.
pub(super) fn drive<U: Unit>(unit: &mut U, first: impl IntoIterator<Item = U::Stage>) -> Result<()> {
    let mut queue: VecDeque<U::Stage> = first.into_iter().collect();
    while let Some(stage) = queue.pop_front() {
        match unit.step(stage)? {
            Next::Done => {}
            Next::Then(more) => queue.extend(more),
            Next::Requeue(again) => {
                queue.iter_mut().for_each(U::rebuild);
                queue.push_front(again);
            }
            Next::Retry(again) => queue.push_front(again),
            Next::Fail(error) => return Err(error),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stages are numbers (`rebuilt` adds 100); each one's handler is scripted.
    struct Script {
        ran: Vec<u32>,
    }

    impl Unit for Script {
        type Stage = u32;
        fn step(&mut self, stage: u32) -> Result<Next<u32>> {
            self.ran.push(stage);
            Ok(match stage {
                1 => Next::Then(vec![5]),
                2 if !self.ran.contains(&20) => Next::Requeue(20),
                3 => Next::Retry(30),
                5 => Next::Fail(anyhow::anyhow!("five")),
                _ => Next::Done,
            })
        }
        fn rebuild(stage: &mut u32) {
            *stage += 100;
        }
    }

    #[test]
    fn handlers_decide_the_order_and_the_loop_only_follows() {
        let mut unit = Script { ran: Vec::new() };
        let end = drive(&mut unit, [2, 3, 4]);
        assert!(end.is_ok());
        // 2 is requeued as 20 and the rest rebuilt; 103 is retried as 30 as it is.
        assert_eq!(unit.ran, vec![2, 20, 103, 104]);
        let mut unit = Script { ran: Vec::new() };
        let end = drive(&mut unit, [3, 1, 4]);
        assert_eq!(end.unwrap_err().to_string(), "five");
        assert_eq!(unit.ran, vec![3, 30, 1, 4, 5]);
    }
}
