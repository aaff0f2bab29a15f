//! The database session's drivers: a thread that drives its own reads
//! (`db::session::drive_reads_here`, what `protege serve` runs a resolve in) reads
//! PostgreSQL through a connection of its own, and gets the same values.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::import;
use protege::db;

/// On PostgreSQL the shared pool sees none of the statements of a thread inside
/// `drive_reads_here`; elsewhere (SQLite in memory, MySQL/MariaDB) the same statements run
/// on the shared pool as outside it. The message read is the same either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_that_drives_its_reads_reads_postgresql_on_its_own_connection() {
    for backend in common::backends() {
        let (mut conn, name) = backend.create("own_reads").await;
        import(&conn, "support.json").await;
        let statements = Arc::new(AtomicUsize::new(0));
        let seen = statements.clone();
        conn.set_metric_callback(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
        });
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
