//! The database session's drivers: a thread that drives its own reads
//! (`db::session::drive_reads_here`, what `protege serve` runs a resolve in) reads
//! PostgreSQL through a connection of its own, and gets the same values.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::import;
use protege::db;

/// A fresh database of `backend` with the support fixture, and the count of the statements
/// its shared pool runs from now on.
async fn counted(
    backend: &common::Backend,
    test: &str,
) -> (
    sea_orm::DatabaseConnection,
    Option<String>,
    Arc<AtomicUsize>,
) {
    let (mut conn, name) = backend.create(test).await;
    import(&conn, "support.json").await;
    let statements = Arc::new(AtomicUsize::new(0));
    let seen = statements.clone();
    conn.set_metric_callback(move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
    });
    (conn, name, statements)
}

/// On PostgreSQL the shared pool sees none of the statements of a thread inside
/// `drive_reads_here`; elsewhere (SQLite in memory, MySQL/MariaDB) the same statements run
/// on the shared pool as outside it. The message read is the same either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_that_drives_its_reads_reads_postgresql_on_its_own_connection() {
    for backend in common::backends() {
        let (conn, name, statements) = counted(&backend, "own_reads").await;
        let id = "<t1-m5@example.com>";
        let shared = db::load_message(&conn, id).await.unwrap().unwrap();
        let on_shared = statements.swap(0, Ordering::SeqCst);

        let runtime = tokio::runtime::Handle::current();
        let own_conn = conn.clone();
        let own = tokio::task::spawn_blocking(move || {
            // Twice: the second read reuses the thread's connection.
            let first = db::session::drive_reads_here(&runtime, db::load_message(&own_conn, id));
            let again = db::session::drive_reads_here(&runtime, db::load_message(&own_conn, id));
            (first.unwrap().unwrap(), again.unwrap().unwrap())
        })
        .await
        .unwrap();
        let on_own = statements.load(Ordering::SeqCst);

        assert_eq!(own.0, shared, "on {}", backend.name);
        assert_eq!(own.1, shared, "on {}", backend.name);
        if backend.name == "postgres" {
            assert_eq!((on_shared, on_own), (1, 0), "on {}", backend.name);
        } else {
            assert_eq!(on_own, 2 * on_shared, "on {}", backend.name);
        }
        conn.close().await.ok();
        backend.drop_database(name).await;
    }
}

/// A thread's own PostgreSQL connection lost while idle (the server ended its backend) is
/// seen at its next read, which answers through the shared pool; the read after that
/// reconnects the thread's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_whose_own_connection_was_lost_reads_through_the_shared_pool() {
    use sea_orm::ConnectionTrait as _;
    let Some(backend) = common::backends()
        .into_iter()
        .find(|b| b.name == "postgres")
    else {
        return;
    };
    let (conn, name, statements) = counted(&backend, "own_lost").await;
    let id = "<t1-m5@example.com>";
    let expected = db::load_message(&conn, id).await.unwrap().unwrap();
    // The backends are ended from a connection of its own, which is left alone.
    let server = std::env::var("PROTEGE_TEST_POSTGRES_URL").unwrap();
    let mut options =
        sea_orm::ConnectOptions::new(common::with_database(&server, name.as_deref().unwrap()));
    options.max_connections(1).min_connections(1);
    let admin = sea_orm::Database::connect(options).await.unwrap();
    // One thread for the three reads, so they share its own connection.
    let runtime = tokio::runtime::Handle::current();
    let reader = conn.clone();
    let (to_reader, requests) = std::sync::mpsc::channel::<tokio::sync::oneshot::Sender<_>>();
    let thread = std::thread::spawn(move || {
        for answer in requests {
            let found = db::session::drive_reads_here(&runtime, db::load_message(&reader, id));
            answer.send(found.unwrap().unwrap()).unwrap();
        }
    });
    let mut shared_statements = Vec::new();
    for step in 0..3 {
        if step == 1 {
            // Every other backend of the database ended, the thread's own among them, and
            // waited for (ending a backend is only asked for).
            let others = "FROM pg_stat_activity \
                          WHERE datname = current_database() AND pid <> pg_backend_pid()";
            let pids = |sql: String| {
                let admin = &admin;
                async move {
                    let rows = admin
                        .query_all_raw(sea_orm::Statement::from_string(
                            sea_orm::DbBackend::Postgres,
                            sql,
                        ))
                        .await
                        .unwrap();
                    rows.iter()
                        .map(|r| r.try_get_by_index::<i32>(0).unwrap())
                        .collect::<Vec<i32>>()
                }
            };
            let ended = pids(format!("SELECT pid {others}")).await;
            // By their pids: a condition beside `pg_terminate_backend` in one `WHERE` is no
            // guard, the server may call it first.
            let list = ended
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(",");
            pids(format!(
                "SELECT pid FROM unnest(ARRAY[{list}]::int[]) AS pid WHERE pg_terminate_backend(pid)"
            ))
            .await;
            let watchdog = std::time::Instant::now();
            while pids(format!("SELECT pid {others}"))
                .await
                .iter()
                .any(|pid| ended.contains(pid))
            {
                assert!(
                    watchdog.elapsed().as_secs() < 30,
                    "the backends never ended"
                );
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
        let before = statements.load(Ordering::SeqCst);
        let (answer, found) = tokio::sync::oneshot::channel();
        to_reader.send(answer).unwrap();
        let found = found.await.unwrap();
        assert_eq!(found, expected, "read {step}");
        shared_statements.push(statements.load(Ordering::SeqCst) - before);
    }
    drop(to_reader);
    thread.join().unwrap();
    admin.close().await.ok();
    // Its own connection, then the shared pool (the lost connection's read again), then
    // its own connection made again.
    assert_eq!(shared_statements, [0, 1, 0]);
    conn.close().await.ok();
    backend.drop_database(name).await;
}
