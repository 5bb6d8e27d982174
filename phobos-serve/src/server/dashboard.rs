//! The terminal dashboard (ratatui) shown when stdout is a terminal: model,
//! backend, memory, slots, queue, prompt and decode tokens per second over
//! time, and the latest requests. `q` or Ctrl-C quits the server. While it
//! is on, log lines are not written to the terminal ([`is_active`]).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyCode, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Sparkline, Table};

use super::backend::ModelInfo;
use super::metrics::Metrics;

static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Whether the dashboard owns the terminal (logs must stay off it).
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

pub struct Dashboard {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Dashboard {
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Samples of the rates, one per refresh.
const HISTORY_LEN: usize = 120;
const REFRESH: Duration = Duration::from_millis(500);

pub fn spawn(model: Arc<dyn ModelInfo>, metrics: Arc<Metrics>, listen: SocketAddr) -> Dashboard {
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = stop.clone();
    let thread = std::thread::Builder::new()
        .name("phobos-dashboard".into())
        .spawn(move || {
            ACTIVE.store(true, Ordering::Relaxed);
            let mut terminal = ratatui::init();
            let mut prompt_history = VecDeque::with_capacity(HISTORY_LEN);
            let mut decode_history = VecDeque::with_capacity(HISTORY_LEN);
            while !thread_stop.load(Ordering::Relaxed) {
                push_sample(&mut prompt_history, metrics.prompt_tokens_per_second());
                push_sample(&mut decode_history, metrics.decode_tokens_per_second());
                let drawn = terminal.draw(|frame| {
                    draw(
                        frame,
                        &*model,
                        &metrics,
                        listen,
                        &prompt_history,
                        &decode_history,
                    );
                });
                if drawn.is_err() {
                    break;
                }
                if event::poll(REFRESH).unwrap_or(false)
                    && let Ok(Event::Key(key)) = event::read()
                {
                    let ctrl_c = key.code == KeyCode::Char('c')
                        && key.modifiers.contains(KeyModifiers::CONTROL);
                    if key.code == KeyCode::Char('q') || ctrl_c {
                        ratatui::restore();
                        ACTIVE.store(false, Ordering::Relaxed);
                        // Raw mode swallowed the signal: quit as Ctrl-C would.
                        std::process::exit(0);
                    }
                }
            }
            ratatui::restore();
            ACTIVE.store(false, Ordering::Relaxed);
        })
        .ok();
    Dashboard { stop, thread }
}

fn push_sample(history: &mut VecDeque<u64>, value: f64) {
    if history.len() == HISTORY_LEN {
        history.pop_front();
    }
    history.push_back(value.max(0.0) as u64);
}

fn draw(
    frame: &mut ratatui::Frame<'_>,
    model: &dyn ModelInfo,
    metrics: &Metrics,
    listen: SocketAddr,
    prompt_history: &VecDeque<u64>,
    decode_history: &VecDeque<u64>,
) {
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let [header, rates, requests] = Layout::vertical([
        Constraint::Length(5),
        Constraint::Length(8),
        Constraint::Min(4),
    ])
    .areas(frame.area());
    // The engine's own count when it keeps one, else the process's
    // resident memory.
    let memory = match model.memory_bytes() {
        0 => resident_bytes().map_or_else(|| "unknown".to_owned(), |b| format!("{} (RSS)", gib(b))),
        bytes => gib(bytes),
    };
    let summary = vec![
        Line::from(format!(
            "model {}   backend {}   memory {memory}   http://{listen}   (q quits)",
            model.model_id(),
            model.backend_name()
        )),
        Line::from(format!(
            "slots {}/{} active   queue {}   KV cache {}/{} tokens",
            load(&metrics.active_slots),
            load(&metrics.slots_total),
            load(&metrics.queue_depth),
            load(&metrics.kv_used_tokens),
            load(&metrics.kv_capacity_tokens),
        )),
        Line::from(format!(
            "prompt {:.1} tok/s   decode {:.1} tok/s",
            metrics.prompt_tokens_per_second(),
            metrics.decode_tokens_per_second()
        )),
    ];
    frame.render_widget(
        Paragraph::new(summary).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" phobos serve "),
        ),
        header,
    );
    let [prompt_area, decode_area] =
        Layout::horizontal([Constraint::Percentage(50); 2]).areas(rates);
    let prompt: Vec<u64> = prompt_history.iter().copied().collect();
    let decode: Vec<u64> = decode_history.iter().copied().collect();
    frame.render_widget(
        Sparkline::default()
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" prompt tok/s "),
            )
            .data(&prompt)
            .style(Style::default().fg(Color::Cyan)),
        prompt_area,
    );
    frame.render_widget(
        Sparkline::default()
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" decode tok/s "),
            )
            .data(&decode)
            .style(Style::default().fg(Color::Green)),
        decode_area,
    );
    let rows = metrics.recent_requests().into_iter().rev().map(|request| {
        let color = if request.status < 400 {
            Color::Green
        } else {
            Color::Red
        };
        Row::new(vec![
            request.status.to_string(),
            format!("{} ms", request.latency_ms),
            request.path,
        ])
        .style(Style::default().fg(color))
    });
    frame.render_widget(
        Table::new(
            rows,
            [
                Constraint::Length(6),
                Constraint::Length(10),
                Constraint::Min(10),
            ],
        )
        .header(Row::new(vec!["status", "latency", "path"]))
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(" recent requests "),
        ),
        requests,
    );
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Resident set size from /proc (Linux; `None` elsewhere).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // The page size is 4 KiB on the x86-64 and most arm64 Linux machines
    // this runs on; an estimate is enough for a dashboard.
    Some(pages * 4096)
}
