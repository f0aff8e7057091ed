//! A throwaway Redis server for the cluster-lock tests: `redis-server` (the distribution's
//! package, or `$SCHEDPOOL_REDIS_SERVER`) as a child process, its own directory under the
//! system's temporary directory, loopback only, on a free port, killed and removed when
//! dropped. No RDB snapshots; the append-only file as asked ([`Options::aof`]).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How a test server runs.
#[derive(Clone, Debug, Default)]
pub(crate) struct Options {
    /// `appendonly yes` with `appendfsync always`: every write is on disk before its
    /// reply, so a `kill -9` loses nothing.
    pub(crate) aof: bool,
    /// `maxmemory` (bytes) with the `noeviction` policy.
    pub(crate) maxmemory: Option<u64>,
    /// TLS only (no plain port), with a certificate for `localhost` signed by the test CA
    /// (`ca.crt`); `tls-auth-clients yes` when `client_certs`, else `no`.
    pub(crate) tls: bool,
    pub(crate) client_certs: bool,
}

/// A running (or killed) test server.
pub(crate) struct RedisServer {
    root: PathBuf,
    port: u16,
    options: Options,
    child: Mutex<Option<Child>>,
}

impl RedisServer {
    /// A fresh server without persistence, started.
    ///
    /// # Panics
    /// If `redis-server` is missing or does not start, with the reason (and its log).
    pub(crate) fn start() -> RedisServer {
        Self::start_with(Options::default())
    }

    /// A fresh server run as `options` say, started.
    pub(crate) fn start_with(options: Options) -> RedisServer {
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "schedpool-redis-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("create the server's directory");
        let server = RedisServer {
            root,
            port: free_port(),
            options,
            child: Mutex::new(None),
        };
        if server.options.tls {
            super::certs::make(&server.root);
        }
        server.start_again();
        server
    }

    /// The URL of database 0 (`rediss://localhost` for a TLS server, whose certificate
    /// names `localhost`).
    pub(crate) fn url(&self) -> String {
        if self.options.tls {
            format!("rediss://localhost:{}/0", self.port)
        } else {
            format!("redis://127.0.0.1:{}/0", self.port)
        }
    }

    /// The server's port.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// A file of the server's directory (the certificates).
    #[allow(dead_code)] // used by some test binaries only
    pub(crate) fn file(&self, name: &str) -> String {
        self.root.join(name).to_str().unwrap().to_owned()
    }

    /// A plain connection for the tests' own commands (not for a TLS server).
    pub(crate) fn conn(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/0", self.port))
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
            .expect("connect to the test server")
    }

    /// Starts the (killed) server again, on the same port and directory: with the
    /// append-only file, on the data it had.
    pub(crate) fn start_again(&self) {
        let mut cmd = Command::new(server_binary());
        let port = self.port.to_string();
        cmd.args([
            "--bind",
            "127.0.0.1",
            "--protected-mode",
            "no",
            "--save",
            "",
        ])
        .args(["--enable-debug-command", "local", "--daemonize", "no"])
        .arg("--dir")
        .arg(&self.root)
        .arg("--logfile")
        .arg(self.root.join("server.log"));
        if self.options.tls {
            let f = |n: &str| self.root.join(n);
            cmd.args(["--port", "0", "--tls-port", &port])
                .arg("--tls-cert-file")
                .arg(f("server.crt"))
                .arg("--tls-key-file")
                .arg(f("server.key"))
                .arg("--tls-ca-cert-file")
                .arg(f("client-ca.crt"))
                .args([
                    "--tls-auth-clients",
                    if self.options.client_certs {
                        "yes"
                    } else {
                        "no"
                    },
                ]);
        } else {
            cmd.args(["--port", &port]);
        }
        if self.options.aof {
            cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            cmd.args(["--appendonly", "no"]);
        }
        if let Some(bytes) = self.options.maxmemory {
            cmd.args(["--maxmemory", &bytes.to_string()])
                .args(["--maxmemory-policy", "noeviction"]);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "could not run {}: {e}; install the `redis-server` package, or set \
                     SCHEDPOOL_REDIS_SERVER to the server binary",
                    server_binary()
                )
            });
        *self.child.lock().unwrap() = Some(child);
        if !self.wait_ready() {
            let log = std::fs::read_to_string(self.root.join("server.log")).unwrap_or_default();
            panic!("the test Redis server did not start; its log:\n{log}");
        }
    }

    /// Whether the server answers within 10 s (it listens once it has loaded its data).
    fn wait_ready(&self) -> bool {
        let give_up = Instant::now() + Duration::from_secs(10);
        while Instant::now() < give_up {
            let listening = std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok();
            if listening && (self.options.tls || self.ping()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn ping(&self) -> bool {
        let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{}/0", self.port)) else {
            return false;
        };
        client
            .get_connection_with_timeout(Duration::from_secs(1))
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
            .is_ok()
    }

    /// Kills the server (`kill -9`: a crash, nothing written at exit) and waits for it.
    pub(crate) fn kill(&self) {
        if let Some(mut child) = self.child.lock().unwrap().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops (`SIGSTOP`) or continues (`SIGCONT`) the server: a hung server.
    #[allow(dead_code)] // used by some test binaries only
    pub(crate) fn signal(&self, sig: &str) {
        let pid = self.child.lock().unwrap().as_ref().expect("running").id();
        let ok = Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig} {pid}");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The server binary: `$SCHEDPOOL_REDIS_SERVER`, else `redis-server` on the path.
fn server_binary() -> String {
    std::env::var("SCHEDPOOL_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned())
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    l.local_addr().unwrap().port()
}
