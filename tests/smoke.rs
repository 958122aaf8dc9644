use std::thread;
#[test]
fn smoke_threads() {
    for cap in [Some(0), Some(1), Some(64), None] {
        let (mut tx, rx) = match cap {
            Some(c) => amphi::spmc::bounded(c),
            None => amphi::spmc::unbounded(),
        };
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let rx = rx.clone();
                thread::spawn(move || {
                    rx.iter()
                        .fold((0u64, 0usize), |(s, n), v: u64| (s + v, n + 1))
                })
            })
            .collect();
        drop(rx);
        for i in 0..100_000u64 {
            tx.send(i).unwrap();
        }
        drop(tx);
        let (s, n) = hs
            .into_iter()
            .map(|h| h.join().unwrap())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        assert_eq!(n, 100_000);
        assert_eq!(s, 100_000 * 99_999 / 2);
    }
}
#[test]
fn smoke_tokio() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .build()
        .unwrap();
    for cap in [Some(0), Some(1), Some(64), None] {
        rt.block_on(async {
            let (mut tx, rx) = match cap {
                Some(c) => amphi::spmc::bounded_async(c),
                None => amphi::spmc::unbounded_async(),
            };
            let hs: Vec<_> = (0..8)
                .map(|_| {
                    let rx = rx.clone();
                    tokio::spawn(async move {
                        let mut s = 0u64;
                        let mut n = 0;
                        while let Ok(v) = rx.recv().await {
                            s += v;
                            n += 1;
                        }
                        (s, n)
                    })
                })
                .collect();
            drop(rx);
            for i in 0..100_000u64 {
                tx.send(i).await.unwrap();
            }
            drop(tx);
            let mut t = (0, 0);
            for h in hs {
                let r = h.await.unwrap();
                t.0 += r.0;
                t.1 += r.1;
            }
            assert_eq!(t.1, 100_000);
            assert_eq!(t.0, 100_000 * 99_999 / 2);
        });
    }
}
