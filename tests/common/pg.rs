//! A throwaway PostgreSQL server for the cluster-lock tests: its own data directory
//! under the system's temporary directory, loopback only, on a free port, stopped and
//! removed when dropped. The server binaries come from `$SCHEDPOOL_PG_BIN`, else
//! `pg_config --bindir`, else the newest `/usr/lib/postgresql/*/bin` (the Debian
//! package). Run as root, the server runs as the `postgres` user (`runuser`), since
//! PostgreSQL refuses to run as root.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A running (or stopped) test server.
pub(crate) struct PgServer {
    bin: PathBuf,
    root: PathBuf,
    port: u16,
    /// Run the server's commands as `postgres` (the tests run as root).
    as_postgres: bool,
    /// The server accepts TLS connections only ([`PgServer::start_tls`]).
    tls: bool,
}

impl PgServer {
    /// A fresh server, started.
    ///
    /// # Panics
    /// If the PostgreSQL binaries are missing or the server does not start, with the
    /// reason (and the server's log).
    pub(crate) fn start() -> PgServer {
        Self::start_with(false)
    }

    /// A fresh server that accepts TLS connections only (`hostssl` in `pg_hba.conf`, no
    /// plain TCP), with a certificate for `localhost` (not for `127.0.0.1`) signed by a
    /// test CA ([`ca_file`](Self::ca_file)); [`other_ca_file`](Self::other_ca_file) is a
    /// CA that signed nothing. Its database `certs` admits only clients with a certificate
    /// for the user `postgres` signed by a client CA (`cert` authentication); the client
    /// certificates and keys are [`file`](Self::file)s (the list at `common::certs::make`).
    /// Made with the `openssl` command.
    pub(crate) fn start_tls() -> PgServer {
        Self::start_with(true)
    }

    /// A file of the server's directory, by name (the certificates and keys).
    #[allow(dead_code)] // used by some test binaries only
    pub(crate) fn file(&self, name: &str) -> String {
        self.root.join(name).to_str().unwrap().to_owned()
    }

    /// The test CA's certificate (PEM), for `sslrootcert`.
    pub(crate) fn ca_file(&self) -> String {
        self.root.join("ca.crt").to_str().unwrap().to_owned()
    }

    /// A CA certificate that signed nothing here.
    pub(crate) fn other_ca_file(&self) -> String {
        self.root.join("other.crt").to_str().unwrap().to_owned()
    }

    fn start_with(tls: bool) -> PgServer {
        static N: AtomicUsize = AtomicUsize::new(0);
        let bin = bin_dir();
        let as_postgres = is_root();
        let root = std::env::temp_dir().join(format!(
            "schedpool-pg-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("create the server's directory");
        if as_postgres {
            run(Command::new("chown").arg("postgres:").arg(&root));
        }
        let server = PgServer {
            bin,
            root,
            port: free_port(),
            as_postgres,
            tls,
        };
        server.pg(
            "initdb",
            &[
                "-D",
                server.data().to_str().unwrap(),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "-N",
            ],
        );
        if tls {
            server.make_certificates();
        }
        server.start_again();
        if tls {
            server
                .socket_client()
                .batch_execute("CREATE DATABASE certs")
                .expect("create the database that demands client certificates");
        }
        server
    }

    /// The certificates and keys (`common::certs::make`), and a TLS-only `pg_hba.conf`,
    /// with `cert` authentication for the database `certs`.
    fn make_certificates(&self) {
        let r = &self.root;
        super::certs::make(r);
        std::fs::write(
            self.data().join("pg_hba.conf"),
            "local all all trust\nhostssl certs all 127.0.0.1/32 cert\n\
             hostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n",
        )
        .unwrap();
        if self.as_postgres {
            run(Command::new("chown").arg("-R").arg("postgres:").arg(r));
        }
        run(Command::new("chmod").arg("600").arg(r.join("server.key")));
    }

    fn data(&self) -> PathBuf {
        self.root.join("data")
    }

    /// The connection string of the server's `postgres` database.
    pub(crate) fn url(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }

    /// The server's port.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// A client on the server's Unix socket (plain, whatever TCP demands), for the tests'
    /// own queries.
    pub(crate) fn socket_client(&self) -> postgres::Client {
        let conn = format!(
            "host={} port={} user=postgres dbname=postgres",
            self.root.to_str().unwrap(),
            self.port
        );
        postgres::Client::connect(&conn, postgres::NoTls).expect("connect on the socket")
    }

    /// A plain client, for the tests' own queries.
    pub(crate) fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url(), postgres::NoTls).expect("connect to the test server")
    }

    /// Starts the (stopped) server again, on the same port and data.
    pub(crate) fn start_again(&self) {
        let mut opts = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c shared_buffers=16MB \
             -c max_connections=60",
            self.port,
            self.root.to_str().unwrap()
        );
        if self.tls {
            let r = self.root.to_str().unwrap();
            opts.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={r}/server.crt -c ssl_key_file={r}/server.key \
                 -c ssl_ca_file={r}/client-ca.crt"
            ));
        }
        let log = self.root.join("server.log");
        let ok = self.pg_status(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().unwrap(),
                "-l",
                log.to_str().unwrap(),
                "-o",
                &opts,
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        if !ok {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("the test PostgreSQL server did not start; its log:\n{log}");
        }
    }

    /// Stops the server (`fast`: connections are closed, as in a restart).
    pub(crate) fn stop(&self) {
        self.pg_status(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().unwrap(),
                "-m",
                "fast",
                "-w",
                "stop",
            ],
        );
    }

    fn pg(&self, tool: &str, args: &[&str]) {
        assert!(self.pg_status(tool, args), "{tool} {args:?} failed");
    }

    fn pg_status(&self, tool: &str, args: &[&str]) -> bool {
        let exe = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap_or_else(|e| panic!("could not run {}: {e}", exe.display()))
            .success()
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.pg_status(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn run(cmd: &mut Command) {
    let status = cmd.status().expect("run a helper command");
    assert!(status.success(), "{cmd:?} failed");
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Where `initdb`, `pg_ctl` and `postgres` are.
fn bin_dir() -> PathBuf {
    let has_server = |d: &Path| d.join("initdb").exists() && d.join("pg_ctl").exists();
    if let Some(dir) = std::env::var_os("SCHEDPOOL_PG_BIN") {
        return PathBuf::from(dir);
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_server(&dir) {
            return dir;
        }
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let dir = e.path().join("bin");
            has_server(&dir).then_some((version, dir))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, d)| d).unwrap_or_else(|| {
        panic!(
            "no PostgreSQL server binaries: install the `postgresql` package, or set \
             SCHEDPOOL_PG_BIN to the directory holding initdb and pg_ctl"
        )
    })
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    l.local_addr().unwrap().port()
}
