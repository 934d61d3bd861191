//! Heartbeats of a pull-mode executor while its task slots are all busy.
//!
//! Ballista 53's pull-mode executor tells the scheduler it is alive only when it polls for
//! work, and it polls only while a task slot is free (`execution_loop::poll_loop` waits for a
//! permit first). An executor whose slots stay busy for longer than the scheduler's
//! `--executor-timeout` is taken for dead: its tasks — finished ones included — are run again
//! elsewhere while they still run here. Push mode has a heartbeat loop, pull mode none; so this
//! process sends the heartbeat push mode would (the scheduler's `heart_beat_from_executor`,
//! which it accepts in pull mode too) every `--heartbeat` seconds, for as long as the executor
//! runs and is not terminating.
//!
//! Ballista makes the executor's id inside `start_executor_process` and only logs it
//! (`Executor id: …`, through the `log` crate, which the CLI's subscriber turns into `tracing`
//! events): [`ExecutorIdLayer`], a layer of that subscriber, hands the id over when the event
//! passes.

use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ballista_core::serde::protobuf::executor_status::Status;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use ballista_core::serde::protobuf::{ExecutorStatus, HeartBeatParams};
use ballista_core::utils::create_grpc_client_endpoint;
use tokio::sync::oneshot;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;

/// The prefix of the record Ballista 53 logs the executor's id with.
const ID_RECORD: &str = "Executor id: ";

/// Where [`start`] finds the id [`ExecutorIdLayer`] caught.
static CAUGHT: Mutex<Option<oneshot::Receiver<String>>> = Mutex::new(None);

/// A `tracing` layer that catches the executor's id (see the module docs). Add it to the
/// process's subscriber, letting INFO events through to it, before [`start`].
pub struct ExecutorIdLayer {
    id: Mutex<Option<oneshot::Sender<String>>>,
}

impl ExecutorIdLayer {
    /// A layer whose catch [`start`] will use.
    pub fn new() -> Self {
        let (tx, rx) = oneshot::channel();
        *CAUGHT.lock().unwrap_or_else(|e| e.into_inner()) = Some(rx);
        Self {
            id: Mutex::new(Some(tx)),
        }
    }
}

impl Default for ExecutorIdLayer {
    fn default() -> Self {
        Self::new()
    }
}

/// The `message` field of an event, formatted.
struct Message(Option<String>);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = Some(format!("{value:?}"));
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ExecutorIdLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut guard = self.id.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            return;
        }
        let mut message = Message(None);
        event.record(&mut message);
        if let Some(id) = message.0.as_deref().and_then(|m| m.strip_prefix(ID_RECORD))
            && let Some(sender) = guard.take()
        {
            let _ = sender.send(id.trim().to_string());
        }
    }
}

/// Starts sending heartbeats to the scheduler at `host:port` every `every`, once
/// [`ExecutorIdLayer`] caught the executor's id (from then on task errors name the executor by
/// its id and `address`). Returns false (and logs why) when no such layer was installed.
pub fn start(address: &str, host: &str, port: u16, every: Duration) -> bool {
    let Some(rx) = CAUGHT.lock().unwrap_or_else(|e| e.into_inner()).take() else {
        tracing::warn!(
            "no ExecutorIdLayer in this process's tracing subscriber: this executor sends no \
             heartbeat while its task slots are busy (a task longer than the scheduler's \
             --executor-timeout runs twice)"
        );
        return false;
    };
    let url = format!("http://{host}:{port}");
    let address = address.to_string();
    tokio::spawn(async move {
        let Ok(executor_id) = rx.await else {
            return;
        };
        crate::exec::set_executor_name(format!("{executor_id} ({address})"));
        tracing::info!(executor = %executor_id, every = ?every, "sending heartbeats");
        let mut client = None;
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            if ballista_executor::executor_server::TERMINATING.load(Ordering::Acquire) {
                // Ballista has told the scheduler it is terminating: an Active heartbeat now
                // would undo that.
                return;
            }
            if client.is_none() {
                let endpoint = match create_grpc_client_endpoint(url.clone(), None) {
                    Ok(e) => e,
                    Err(e) => {
                        tracing::warn!(scheduler = %url, error = %e, "no heartbeat endpoint");
                        return;
                    }
                };
                match endpoint.connect().await {
                    Ok(channel) => client = Some(SchedulerGrpcClient::new(channel)),
                    Err(e) => {
                        tracing::debug!(scheduler = %url, error = %e, "heartbeat: no connection");
                        continue;
                    }
                }
            }
            let Some(c) = client.as_mut() else {
                continue;
            };
            let beat = HeartBeatParams {
                executor_id: executor_id.clone(),
                metrics: Vec::new(),
                status: Some(ExecutorStatus {
                    status: Some(Status::Active(String::new())),
                }),
                metadata: None,
            };
            if let Err(e) = c.heart_beat_from_executor(beat).await {
                tracing::debug!(scheduler = %url, error = %e, "heartbeat not taken");
                client = None;
            }
        }
    });
    true
}
