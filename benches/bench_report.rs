//! Turns criterion's saved results of `cargo bench -p amphi-benches --bench channels` into the
//! tables of BENCHMARKS.md and the chart `benches/chart.svg`. Run it from the workspace root (the
//! default paths are relative to it):
//!
//! ```text
//! cargo run --release -p amphi-benches --bin bench_report             # section "results", benches/chart.svg
//! cargo run --release -p amphi-benches --bin bench_report -- 16-core  # section "results:16-core", benches/chart-16-core.svg
//! cargo run --release -p amphi-benches --bin bench_report -- 16-core --criterion /path/to/criterion --out BENCHMARKS.md
//! ```
//!
//! It reads every `<criterion dir>/**/new/benchmark.json` (for the group and function ids) and
//! the `new/estimates.json` next to it (median point estimate, nanoseconds per iteration), so
//! only the latest run of each benchmark counts. The criterion directory is `--criterion DIR`,
//! else `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`, else `target/criterion`.
//!
//! The generated text replaces what lies between `<!-- results:begin -->` and
//! `<!-- results:end -->` (with a label: `<!-- results:LABEL:begin -->` ...) in the output file;
//! if the markers are missing, a new section is inserted before `## History` (or appended), so
//! hand-written text around it stays, and sections from different machines coexist.
//!
//! Each row's ratio is amphi's median divided by the fastest peer's median measured in the
//! same run; below 1.00 amphi is the fastest.

use std::collections::BTreeMap;
use std::error::Error;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use plotters::prelude::*;

type Res<T> = Result<T, Box<dyn Error>>;

/// Peers in column order; the first is amphi itself.
const PEERS: [&str; 6] = [
    "amphi",
    "crossbeam",
    "flume",
    "kanal",
    "async-channel",
    "tokio",
];
/// Batch variants in column order; the first is the baseline.
const BATCH: [&str; 4] = ["amphi", "amphi-send_batch", "amphi-recv_many", "amphi-both"];
const WHERE_ORDER: [&str; 6] = [
    "threads",
    "tokio-ct",
    "tokio-4w",
    "smol-4t",
    "sync-tokio-4w",
    "tokio-4w-threads",
];
const QUEUE_ORDER: [&str; 4] = ["bounded64", "bounded1", "bounded0", "unbounded"];
const PRIM_ORDER: [&str; 7] = [
    "ready-send-recv",
    "ready-send-recv-async",
    "round-trip",
    "round-trip-async-tokio-4w",
    "wake-blocked-sender",
    "cancel-async-send",
    "cancel-async-recv",
];

struct Args {
    label: Option<String>,
    criterion: PathBuf,
    out: PathBuf,
    chart: PathBuf,
}

fn parse_args() -> Res<Args> {
    let mut label = None;
    let mut criterion = None;
    let mut out = PathBuf::from("BENCHMARKS.md");
    let mut chart = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--criterion" => criterion = Some(PathBuf::from(it.next().ok_or("--criterion DIR")?)),
            "--out" => out = PathBuf::from(it.next().ok_or("--out FILE")?),
            "--chart" => chart = Some(PathBuf::from(it.next().ok_or("--chart FILE")?)),
            "-h" | "--help" => {
                println!(
                    "usage: bench_report [LABEL] [--criterion DIR] [--out BENCHMARKS.md] [--chart FILE.svg]"
                );
                std::process::exit(0);
            }
            s if s.starts_with('-') => return Err(format!("unknown option {s}").into()),
            s => {
                if label.is_some() {
                    return Err("only one label".into());
                }
                if !s
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
                {
                    return Err("the label may hold only letters, digits, '-', '_' and '.'".into());
                }
                label = Some(s.to_string());
            }
        }
    }
    let criterion = criterion.unwrap_or_else(|| {
        if let Some(h) = std::env::var_os("CRITERION_HOME") {
            PathBuf::from(h)
        } else if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
            PathBuf::from(t).join("criterion")
        } else {
            PathBuf::from("target/criterion")
        }
    });
    let chart = chart.unwrap_or_else(|| match &label {
        Some(l) => PathBuf::from(format!("benches/chart-{l}.svg")),
        None => PathBuf::from("benches/chart.svg"),
    });
    Ok(Args {
        label,
        criterion,
        out,
        chart,
    })
}

/// group id -> function id -> median ns per iteration; plus the time range of the results.
struct Results {
    groups: BTreeMap<String, BTreeMap<String, f64>>,
    oldest: Option<SystemTime>,
    newest: Option<SystemTime>,
}

fn collect(dir: &Path, res: &mut Results) -> Res<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if !path.is_dir() {
            continue;
        }
        let bench = path.join("benchmark.json");
        let est = path.join("estimates.json");
        if path.file_name().is_some_and(|n| n == "new") && bench.is_file() && est.is_file() {
            let b: serde_json::Value = serde_json::from_str(&fs::read_to_string(&bench)?)?;
            let e: serde_json::Value = serde_json::from_str(&fs::read_to_string(&est)?)?;
            let group = b["group_id"].as_str().unwrap_or_default().to_string();
            let func = b["function_id"].as_str().unwrap_or_default().to_string();
            let median = e["median"]["point_estimate"]
                .as_f64()
                .ok_or_else(|| format!("no median in {}", est.display()))?;
            res.groups.entry(group).or_default().insert(func, median);
            if let Ok(t) = fs::metadata(&est).and_then(|m| m.modified()) {
                res.oldest = Some(res.oldest.map_or(t, |o| o.min(t)));
                res.newest = Some(res.newest.map_or(t, |n| n.max(t)));
            }
        } else if path.file_name().is_some_and(|n| n != "report") {
            collect(&path, res)?;
        }
    }
    Ok(())
}

/// "4.90 ms", "856 µs", "75.3 ns": three significant digits.
fn fmt_time(ns: f64) -> String {
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

fn rank(order: &[&str], s: &str) -> (usize, String) {
    (
        order.iter().position(|o| *o == s).unwrap_or(order.len()),
        s.to_string(),
    )
}

fn counts_rank(s: &str) -> (usize, String) {
    let n: usize = s
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or(usize::MAX);
    (n, s.to_string())
}

/// One row of a peer table.
struct Row {
    /// Short name for the chart, e.g. "spmc threads bounded64 8c".
    name: String,
    cells: Vec<String>,
    ratio: Option<f64>,
}

/// amphi's median divided by the fastest peer's median.
fn ratio(fns: &BTreeMap<String, f64>) -> Option<f64> {
    let amphi = *fns.get("amphi")?;
    let best = fns
        .iter()
        .filter(|(k, _)| PEERS[1..].contains(&k.as_str()))
        .map(|(_, v)| *v)
        .fold(f64::INFINITY, f64::min);
    best.is_finite().then(|| amphi / best)
}

/// A markdown table of peer medians with one ratio column; only columns with data are shown.
fn peer_table(
    out: &mut String,
    first_cols: &[&str],
    rows: &[(Vec<String>, &BTreeMap<String, f64>, String)],
    chart_rows: &mut Vec<(String, f64)>,
) {
    let cols: Vec<&str> = PEERS
        .iter()
        .copied()
        .filter(|p| rows.iter().any(|(_, fns, _)| fns.contains_key(*p)))
        .collect();
    let mut built = Vec::new();
    for (keys, fns, name) in rows {
        let best_peer = fns
            .iter()
            .filter(|(k, _)| PEERS[1..].contains(&k.as_str()))
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(k, _)| k.clone());
        let mut cells = keys.clone();
        for c in &cols {
            cells.push(match fns.get(*c) {
                Some(v) if best_peer.as_deref() == Some(*c) => format!("**{}**", fmt_time(*v)),
                Some(v) => fmt_time(*v),
                None => "–".to_string(),
            });
        }
        let r = ratio(fns);
        cells.push(match r {
            Some(r) if r <= 1.0 => format!("{r:.2}"),
            Some(r) => format!("**{r:.2}**"),
            None => "–".to_string(),
        });
        built.push(Row {
            name: name.clone(),
            cells,
            ratio: r,
        });
    }
    let mut header: Vec<&str> = first_cols.to_vec();
    header.extend(cols.iter().copied());
    header.push("amphi / fastest peer");
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(
        out,
        "|{}",
        header
            .iter()
            .enumerate()
            .map(|(i, _)| if i < first_cols.len() {
                "---|"
            } else {
                "---:|"
            })
            .collect::<String>()
    );
    for r in built {
        let _ = writeln!(out, "| {} |", r.cells.join(" | "));
        if let Some(x) = r.ratio {
            chart_rows.push((r.name, x));
        }
    }
    out.push('\n');
}

/// `(queue, counts, medians)` of one grid group.
type GridRow<'a> = (&'a str, &'a str, &'a BTreeMap<String, f64>);

fn tables(res: &Results, chart_rows: &mut Vec<(String, f64)>) -> String {
    let mut out = String::new();
    // Split ids: family/where/queue/counts for the grids, family/case/queue for the rest.
    let mut grid: BTreeMap<(String, (usize, String)), Vec<GridRow>> = BTreeMap::new();
    let mut prims: Vec<(&str, &BTreeMap<String, f64>)> = Vec::new();
    let mut batches: Vec<(&str, &BTreeMap<String, f64>)> = Vec::new();
    for (g, fns) in &res.groups {
        let parts: Vec<&str> = g.split('/').collect();
        match parts.as_slice() {
            [fam @ ("spmc" | "mpmc"), wh, q, n] => grid
                .entry((fam.to_string(), rank(&WHERE_ORDER, wh)))
                .or_default()
                .push((q, n, fns)),
            ["prim", ..] => prims.push((g.as_str(), fns)),
            ["batch", ..] => batches.push((g.as_str(), fns)),
            _ => eprintln!("bench_report: ignoring group {g:?}"),
        }
    }

    // mpmc gets one table across "where"s; spmc one table per "where".
    let mut mpmc_rows = Vec::new();
    for ((fam, (_, wh)), mut rows) in grid {
        rows.sort_by_key(|(q, n, _)| (rank(&QUEUE_ORDER, q), counts_rank(n)));
        if fam == "mpmc" {
            for (q, n, fns) in rows {
                mpmc_rows.push((
                    vec![wh.clone(), q.to_string(), n.to_string()],
                    fns,
                    format!("mpmc {wh} {q} {n}"),
                ));
            }
            continue;
        }
        let _ = writeln!(out, "#### spmc, {}\n", where_title(&wh));
        let rows: Vec<_> = rows
            .into_iter()
            .map(|(q, n, fns)| {
                (
                    vec![q.to_string(), n.to_string()],
                    fns,
                    format!("spmc {wh} {q} {n}"),
                )
            })
            .collect();
        peer_table(&mut out, &["queue", "consumers"], &rows, chart_rows);
    }
    if !mpmc_rows.is_empty() {
        let _ = writeln!(out, "#### mpmc, 4 producers / 4 consumers\n");
        peer_table(&mut out, &["where", "queue", "P/C"], &mpmc_rows, chart_rows);
    }
    if !prims.is_empty() {
        let _ = writeln!(
            out,
            "#### Primitive cycles\n\nTimes are per iteration: 1,000,000 send+recv pairs for \
             `ready-send-recv`, 20,000 cycles for `round-trip` and `wake-blocked-sender`, one \
             poll-and-drop for the `cancel` rows.\n"
        );
        prims.sort_by_key(|(g, _)| {
            let p: Vec<&str> = g.split('/').collect();
            (
                rank(&PRIM_ORDER, p.get(1).unwrap_or(&"")),
                rank(&QUEUE_ORDER, p.get(2).unwrap_or(&"")),
            )
        });
        let rows: Vec<_> = prims
            .into_iter()
            .map(|(g, fns)| {
                let case = g.trim_start_matches("prim/");
                (vec![format!("`{case}`")], fns, format!("prim {case}"))
            })
            .collect();
        peer_table(&mut out, &["case"], &rows, chart_rows);
    }
    if !batches.is_empty() {
        let _ = writeln!(
            out,
            "#### Batch calls (amphi against its own plain send/recv)\n\n`send_batch` sends \
             chunks of 64 values, `recv_many` takes up to 64 per call; the ratio in brackets is \
             to plain `send`/`recv` in the same row (below 1.00 the batch call is faster).\n"
        );
        batches.sort_by_key(|(g, _)| {
            let p: Vec<&str> = g.split('/').collect();
            (
                rank(&WHERE_ORDER, p.get(1).unwrap_or(&"")),
                rank(&QUEUE_ORDER, p.get(2).unwrap_or(&"")),
                counts_rank(p.get(3).unwrap_or(&"")),
            )
        });
        let _ = writeln!(
            out,
            "| case | send/recv | send_batch | recv_many | both |\n|---|---:|---:|---:|---:|"
        );
        for (g, fns) in batches {
            let base = fns.get(BATCH[0]).copied();
            let mut cells = vec![format!("`{}`", g.trim_start_matches("batch/"))];
            for (i, b) in BATCH.iter().enumerate() {
                cells.push(match (fns.get(*b), base) {
                    (Some(v), Some(base)) if i > 0 => format!("{} ({:.2})", fmt_time(*v), v / base),
                    (Some(v), _) => fmt_time(*v),
                    (None, _) => "–".to_string(),
                });
            }
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        out.push('\n');
    }
    out
}

fn where_title(wh: &str) -> String {
    match wh {
        "threads" => "std threads (M = 100,000)".into(),
        "tokio-ct" => "tokio current-thread (M = 16,384)".into(),
        "tokio-4w" => "tokio, 4 workers (M = 16,384)".into(),
        "smol-4t" => "smol executor on 4 threads (M = 16,384)".into(),
        "sync-tokio-4w" => {
            "sync producer thread -> async consumers on tokio, 4 workers (M = 16,384)".into()
        }
        "tokio-4w-threads" => {
            "async producer task on tokio, 4 workers -> consumer threads (M = 16,384)".into()
        }
        other => other.into(),
    }
}

fn cmd(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn fmt_system_time(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    cmd(
        "date",
        &["-u", "-d", &format!("@{secs}"), "+%Y-%m-%d %H:%M UTC"],
    )
    .unwrap_or_else(|| format!("{secs} s after the epoch"))
}

/// Versions of the peers (and criterion) from Cargo.lock.
fn lock_versions() -> String {
    let lock = fs::read_to_string("Cargo.lock").unwrap_or_default();
    let wanted = [
        "crossbeam-channel",
        "flume",
        "kanal",
        "async-channel",
        "tokio",
        "smol",
        "criterion",
    ];
    let mut found = Vec::new();
    let mut name = None;
    for line in lock.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), &name) {
            if wanted.contains(&n.as_str()) {
                found.push(format!("{n} {}", v.trim_matches('"')));
            }
            name = None;
        }
    }
    found.sort_by_key(|s| {
        wanted
            .iter()
            .position(|w| s.split(' ').next() == Some(*w))
            .unwrap_or(usize::MAX)
    });
    found.join(", ")
}

fn environment(res: &Results) -> String {
    let cpu = cmd("lscpu", &[])
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Model name:"))
                .map(|l| l["Model name:".len()..].trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let os = fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("PRETTY_NAME=")
                    .map(|v| v.trim_matches('"').to_string())
            })
        })
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    let kernel = cmd("uname", &["-sr"]).unwrap_or_default();
    let rustc = cmd("rustc", &["-V"]).unwrap_or_else(|| "unknown".into());
    let measured = match (res.oldest, res.newest) {
        (Some(a), Some(b)) => format!("{} to {}", fmt_system_time(a), fmt_system_time(b)),
        _ => "unknown".into(),
    };
    format!(
        "| | |\n|---|---|\n| CPU | {cpu} |\n| cores available | {cores} |\n| OS | {os}, {kernel} |\n\
         | rustc | {rustc} |\n| peers | {} |\n| results written | {measured} |\n",
        lock_versions()
    )
}

/// Horizontal bars of amphi's ratio per row on a log axis, centred on 1.00.
fn chart(path: &Path, rows: &[(String, f64)], title: &str) -> Res<()> {
    if rows.is_empty() {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let n = rows.len();
    let lo = rows.iter().map(|r| r.1).fold(1.0f64, f64::min) / 1.25;
    let hi = rows.iter().map(|r| r.1).fold(1.0f64, f64::max) * 1.25;
    let height = 90 + 15 * n as u32;
    let root = SVGBackend::new(path, (980, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut ch = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(300)
        .build_cartesian_2d((lo..hi).log_scale(), (0..n).into_segmented())?;
    ch.configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_style(("sans-serif", 11))
        .y_label_formatter(&|v| match v {
            // Row 0 at the top.
            SegmentValue::CenterOf(i) if *i < n => rows[n - 1 - i].0.clone(),
            _ => String::new(),
        })
        .x_desc("amphi median / fastest peer median (log scale; left of 1 = amphi fastest)")
        // Only 1, 2 and 5 times a power of ten, so the log axis stays legible.
        .x_label_formatter(&|x| {
            let m = x / 10f64.powf(x.log10().floor());
            if [1.0, 2.0, 5.0].iter().any(|k| (m - k).abs() < 1e-6) {
                format!("{x:.2}")
            } else {
                String::new()
            }
        })
        .draw()?;
    let green = RGBColor(46, 139, 87);
    let red = RGBColor(205, 92, 92);
    ch.draw_series(rows.iter().enumerate().map(|(row, (_, r))| {
        let i = n - 1 - row;
        let (a, b) = if *r <= 1.0 { (*r, 1.0) } else { (1.0, *r) };
        let colour = if *r <= 1.0 { green } else { red };
        let mut bar = Rectangle::new(
            [(a, SegmentValue::Exact(i)), (b, SegmentValue::Exact(i + 1))],
            colour.filled(),
        );
        bar.set_margin(2, 2, 0, 0);
        bar
    }))?;
    ch.draw_series(LineSeries::new(
        [(1.0, SegmentValue::Exact(0)), (1.0, SegmentValue::Exact(n))],
        BLACK.stroke_width(1),
    ))?;
    root.present()?;
    Ok(())
}

/// Byte offset of the first line at or after `from` that is exactly `marker` (so a marker quoted
/// inside prose or code does not count).
fn find_line(doc: &str, marker: &str, from: usize) -> Option<usize> {
    let mut at = from;
    for line in doc[from..].split_inclusive('\n') {
        if line.trim_end() == marker {
            return Some(at);
        }
        at += line.len();
    }
    None
}

fn main() -> Res<()> {
    let args = parse_args()?;
    let mut res = Results {
        groups: BTreeMap::new(),
        oldest: None,
        newest: None,
    };
    if !args.criterion.is_dir() {
        return Err(format!(
            "{} not found: run `cargo bench --bench channels` first",
            args.criterion.display()
        )
        .into());
    }
    collect(&args.criterion, &mut res)?;
    if res.groups.is_empty() {
        return Err(format!("no results under {}", args.criterion.display()).into());
    }

    let mut chart_rows = Vec::new();
    let body = tables(&res, &mut chart_rows);
    let met = chart_rows.iter().filter(|r| r.1 <= 1.0).count();
    let geo =
        (chart_rows.iter().map(|r| r.1.ln()).sum::<f64>() / chart_rows.len().max(1) as f64).exp();
    let label = args.label.as_deref();
    let title = match label {
        Some(l) => format!("amphi / fastest peer ({l})"),
        None => "amphi / fastest peer".to_string(),
    };
    chart(&args.chart, &chart_rows, &title)?;

    let (begin, end) = match label {
        Some(l) => (
            format!("<!-- results:{l}:begin -->"),
            format!("<!-- results:{l}:end -->"),
        ),
        None => (
            "<!-- results:begin -->".to_string(),
            "<!-- results:end -->".to_string(),
        ),
    };
    let chart_rel = args.chart.to_string_lossy().replace('\\', "/");
    let mut section = String::new();
    let _ = writeln!(
        section,
        "{begin}\n<!-- generated by `cargo run --release -p amphi-benches --bin bench_report{}`; edits here are overwritten -->\n",
        label.map(|l| format!(" -- {l}")).unwrap_or_default()
    );
    section.push_str(&environment(&res));
    let _ = writeln!(
        section,
        "\namphi is at or below 1.00 in **{met} of {} rows** (peer grid and primitives); geometric \
         mean of the ratios {geo:.2}. In the peer tables the fastest peer's median is in bold, and \
         so is a ratio above 1.00.\n\n![amphi median divided by the fastest peer's median, per row]({chart_rel})\n",
        chart_rows.len()
    );
    section.push_str(&body);
    section.push_str(&end);

    let doc = fs::read_to_string(&args.out).unwrap_or_default();
    let b = find_line(&doc, &begin, 0);
    let e = b.and_then(|b| find_line(&doc, &end, b));
    let new_doc = match (b, e) {
        (Some(b), Some(e)) => format!("{}{}{}", &doc[..b], section, &doc[e + end.len()..]),
        _ => {
            let heading = match label {
                Some(l) => format!("## Results: {l}\n\n"),
                None => "## Results\n\n".to_string(),
            };
            match find_line(&doc, "## History", 0) {
                Some(h) => format!("{}{heading}{section}\n\n{}", &doc[..h], &doc[h..]),
                None => format!("{doc}\n{heading}{section}\n"),
            }
        }
    };
    fs::write(&args.out, new_doc)?;
    println!(
        "bench_report: {} groups from {} -> {} (between {begin} / {end}) and {}; amphi <= 1.00 in {met} of {} rows",
        res.groups.len(),
        args.criterion.display(),
        args.out.display(),
        args.chart.display(),
        chart_rows.len()
    );
    Ok(())
}
