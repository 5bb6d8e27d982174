//! Counters and gauges for `/metrics` (Prometheus text format) and the
//! dashboard. Everything is lock-free except the per-status request counts
//! and the recent-request log.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How many finished requests the dashboard lists.
const RECENT_LEN: usize = 32;

#[derive(Debug, Clone)]
pub struct RecentRequest {
    pub path: String,
    pub status: u16,
    pub latency_ms: u64,
}

#[derive(Default)]
pub struct Metrics {
    pub queue_depth: AtomicU64,
    pub active_slots: AtomicU64,
    pub slots_total: AtomicU64,
    pub kv_used_tokens: AtomicU64,
    pub kv_capacity_tokens: AtomicU64,
    prompt_tokens_total: AtomicU64,
    prompt_tokens_cached_total: AtomicU64,
    generated_tokens_total: AtomicU64,
    prompt_micros_total: AtomicU64,
    decode_micros_total: AtomicU64,
    /// f64 bits of the rate measured over the last prefill / decode step.
    prompt_tokens_per_second_bits: AtomicU64,
    decode_tokens_per_second_bits: AtomicU64,
    requests_by_status: Mutex<BTreeMap<u16, u64>>,
    recent: Mutex<VecDeque<RecentRequest>>,
}

impl Metrics {
    pub fn record_prefill(&self, computed_tokens: usize, cached_tokens: usize, time: Duration) {
        self.prompt_tokens_total
            .fetch_add((computed_tokens + cached_tokens) as u64, Ordering::Relaxed);
        self.prompt_tokens_cached_total
            .fetch_add(cached_tokens as u64, Ordering::Relaxed);
        self.prompt_micros_total
            .fetch_add(time.as_micros() as u64, Ordering::Relaxed);
        let rate = computed_tokens as f64 / time.as_secs_f64().max(1e-9);
        self.prompt_tokens_per_second_bits
            .store(rate.to_bits(), Ordering::Relaxed);
    }

    pub fn record_decode(&self, tokens: usize, time: Duration) {
        self.generated_tokens_total
            .fetch_add(tokens as u64, Ordering::Relaxed);
        self.decode_micros_total
            .fetch_add(time.as_micros() as u64, Ordering::Relaxed);
        let rate = tokens as f64 / time.as_secs_f64().max(1e-9);
        self.decode_tokens_per_second_bits
            .store(rate.to_bits(), Ordering::Relaxed);
    }

    pub fn record_request(&self, request: RecentRequest) {
        *self
            .requests_by_status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(request.status)
            .or_default() += 1;
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if recent.len() == RECENT_LEN {
            recent.pop_front();
        }
        recent.push_back(request);
    }

    pub fn recent_requests(&self) -> Vec<RecentRequest> {
        self.recent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    pub fn prompt_tokens_per_second(&self) -> f64 {
        f64::from_bits(self.prompt_tokens_per_second_bits.load(Ordering::Relaxed))
    }

    pub fn decode_tokens_per_second(&self) -> f64 {
        f64::from_bits(self.decode_tokens_per_second_bits.load(Ordering::Relaxed))
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        out.push_str("# HELP phobos_requests_total HTTP requests answered, by status.\n");
        out.push_str("# TYPE phobos_requests_total counter\n");
        for (status, count) in self
            .requests_by_status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let _ = writeln!(out, "phobos_requests_total{{status=\"{status}\"}} {count}");
        }
        let mut metric = |name: &str, kind: &str, help: &str, value: f64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        };
        metric(
            "phobos_prompt_tokens_total",
            "counter",
            "Prompt tokens ingested (computed plus reused from a slot's cache).",
            load(&self.prompt_tokens_total) as f64,
        );
        metric(
            "phobos_prompt_tokens_cached_total",
            "counter",
            "Prompt tokens reused from a slot's cache.",
            load(&self.prompt_tokens_cached_total) as f64,
        );
        metric(
            "phobos_generated_tokens_total",
            "counter",
            "Tokens generated.",
            load(&self.generated_tokens_total) as f64,
        );
        metric(
            "phobos_prompt_seconds_total",
            "counter",
            "Time spent in prefill.",
            load(&self.prompt_micros_total) as f64 / 1e6,
        );
        metric(
            "phobos_decode_seconds_total",
            "counter",
            "Time spent in decode steps.",
            load(&self.decode_micros_total) as f64 / 1e6,
        );
        metric(
            "phobos_prompt_tokens_per_second",
            "gauge",
            "Prefill rate of the latest prompt.",
            self.prompt_tokens_per_second(),
        );
        metric(
            "phobos_decode_tokens_per_second",
            "gauge",
            "Aggregate decode rate of the latest batched step.",
            self.decode_tokens_per_second(),
        );
        metric(
            "phobos_queue_depth",
            "gauge",
            "Requests waiting for a slot.",
            load(&self.queue_depth) as f64,
        );
        metric(
            "phobos_slots_active",
            "gauge",
            "Slots generating now.",
            load(&self.active_slots) as f64,
        );
        metric(
            "phobos_slots_total",
            "gauge",
            "Slots (--parallel).",
            load(&self.slots_total) as f64,
        );
        metric(
            "phobos_kv_cache_used_tokens",
            "gauge",
            "Tokens held in the slots' KV caches.",
            load(&self.kv_used_tokens) as f64,
        );
        metric(
            "phobos_kv_cache_capacity_tokens",
            "gauge",
            "Tokens all slots' KV caches can hold.",
            load(&self.kv_capacity_tokens) as f64,
        );
        out
    }
}
