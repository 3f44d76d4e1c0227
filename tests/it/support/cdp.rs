//! A small Chrome DevTools Protocol client for the browser tests: headless Chromium
//! started with `--remote-debugging-pipe`, which reads commands from its fd 3 and writes
//! replies and events to its fd 4, each a JSON object ended by a NUL byte. No WebSocket,
//! no async runtime and no crate: it compiles in the time of this file.
//!
//! It does what the tests need: open a page and wait for its load, evaluate JavaScript,
//! click at an element's centre with real mouse events, collect the page's console errors
//! and exceptions, and save a screenshot.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long one command may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The Chromium to drive: `KPROF_CHROMIUM`, else the first of Debian's and Google's
/// names on `PATH`.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KPROF_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
        .find(|p| p.is_file())
}

/// A pipe whose two ends are numbered 10 or higher and close on exec.
fn pipe() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0, "pipe2");
    let high = |fd: RawFd| {
        let h = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
        assert!(h >= 10, "fcntl");
        unsafe { libc::close(fd) };
        h
    };
    (high(fds[0]), high(fds[1]))
}

/// A running headless Chromium.
pub struct Browser {
    child: Child,
    commands: File,
    replies: Receiver<Value>,
    next_id: u64,
    /// Every event received, in order.
    events: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts `binary` headless (without its sandbox when running as root, which
    /// Chromium requires).
    pub fn launch(binary: &Path) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let (their_in, our_out) = pipe();
        let (our_in, their_out) = pipe();
        let mut cmd = Command::new(binary);
        cmd.args(["--headless", "--remote-debugging-pipe", "--disable-gpu", "--no-first-run"])
            .args(["--no-default-browser-check", "--disable-extensions", "--hide-scrollbars", "--mute-audio"])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if unsafe { libc::geteuid() } == 0 {
            cmd.arg("--no-sandbox");
        }
        // The child's ends become its fds 3 and 4 (dup2 clears close-on-exec there).
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(their_in, 3) < 0 || libc::dup2(their_out, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap_or_else(|e| panic!("could not start {}: {e}", binary.display()));
        unsafe {
            libc::close(their_in);
            libc::close(their_out);
        }
        let (tx, replies) = channel();
        let mut input = unsafe { File::from_raw_fd(our_in) };
        std::thread::spawn(move || {
            let (mut buf, mut chunk) = (Vec::new(), [0u8; 65536]);
            while let Ok(n) = input.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                while let Some(end) = buf.iter().position(|b| *b == 0) {
                    let message: Vec<u8> = buf.drain(..=end).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&message[..end]) {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let commands = unsafe { File::from_raw_fd(our_out) };
        Browser { child, commands, replies, next_id: 0, events: Vec::new(), _profile: profile }
    }

    /// Sends `method` (to the page of `session`, when given) and returns its result.
    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.commands.write_all(&bytes).expect("the browser closed its pipe");
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self
                .replies
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no reply to {method} within {TIMEOUT:?}"));
            if m["id"] == json!(id) {
                assert!(m.get("error").is_none(), "{method} failed: {}", m["error"]);
                return m["result"].clone();
            }
            self.events.push(m);
        }
    }

    /// Waits for the event `method` of `session`.
    fn wait_for(&mut self, session: &str, method: &str) {
        let seen = |e: &Value| e["method"] == json!(method) && e["sessionId"] == json!(session);
        if self.events.iter().any(seen) {
            return;
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m =
                self.replies.recv_timeout(left).unwrap_or_else(|_| panic!("no {method} within {TIMEOUT:?}"));
            let done = seen(&m);
            self.events.push(m);
            if done {
                return;
            }
        }
    }

    /// Opens `file` in a new tab, 1280 pixels wide, and waits until it has loaded.
    pub fn open(&mut self, file: &Path) -> Tab<'_> {
        let target = self.call(None, "Target.createTarget", json!({ "url": "about:blank" }));
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target["targetId"], "flatten": true }),
        );
        let session = attached["sessionId"].as_str().unwrap().to_string();
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            self.call(Some(&session), domain, json!({}));
        }
        let metrics = json!({ "width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false });
        self.call(Some(&session), "Emulation.setDeviceMetricsOverride", metrics);
        let url = format!("file://{}", file.canonicalize().unwrap().display());
        self.call(Some(&session), "Page.navigate", json!({ "url": url }));
        self.wait_for(&session, "Page.loadEventFired");
        Tab { browser: self, session }
    }
}

impl Drop for Browser {
    /// Asks the browser to close (its renderers with it), and kills it when it has not
    /// within 5 s.
    fn drop(&mut self) {
        let _ = self.commands.write_all(b"{\"id\":0,\"method\":\"Browser.close\",\"params\":{}}\0");
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One open page.
pub struct Tab<'a> {
    browser: &'a mut Browser,
    session: String,
}

impl Tab<'_> {
    /// The value of the JavaScript `expression`; a thrown exception fails the test.
    pub fn eval(&mut self, expression: &str) -> Value {
        let params = json!({ "expression": expression, "returnByValue": true, "awaitPromise": true });
        let r = self.browser.call(Some(&self.session.clone()), "Runtime.evaluate", params);
        assert!(r.get("exceptionDetails").is_none(), "{expression} threw: {}", r["exceptionDetails"]);
        r["result"]["value"].clone()
    }

    /// Clicks the centre of the first element `selector` matches, with mouse events.
    pub fn click(&mut self, selector: &str) {
        let at = self.eval(&format!(
            "(() => {{ const e = document.querySelector({}); e.scrollIntoView({{block: 'center'}}); \
             const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()",
            json!(selector)
        ));
        let session = self.session.clone();
        for kind in ["mousePressed", "mouseReleased"] {
            let event = json!({ "type": kind, "x": at[0], "y": at[1], "button": "left", "clickCount": 1 });
            self.browser.call(Some(&session), "Input.dispatchMouseEvent", event);
        }
    }

    /// The page's console errors, uncaught exceptions and logged errors so far.
    pub fn errors(&mut self) -> Vec<String> {
        self.eval("0"); // a round trip, so that events sent before it have arrived
        let own = |e: &&Value| e["sessionId"] == json!(self.session);
        self.browser
            .events
            .iter()
            .filter(own)
            .filter_map(|e| match e["method"].as_str()? {
                "Runtime.exceptionThrown" => Some(e["params"]["exceptionDetails"].to_string()),
                "Runtime.consoleAPICalled" if e["params"]["type"] == json!("error") => {
                    Some(e["params"].to_string())
                }
                "Log.entryAdded" if e["params"]["entry"]["level"] == json!("error") => {
                    Some(e["params"].to_string())
                }
                _ => None,
            })
            .collect()
    }

    /// Saves the whole page as a PNG at `path`.
    pub fn screenshot(&mut self, path: &Path) {
        let height = self.eval("Math.ceil(document.documentElement.scrollHeight)").as_f64().unwrap_or(900.0);
        let clip = json!({ "x": 0, "y": 0, "width": 1280, "height": height.min(16000.0), "scale": 1 });
        let params = json!({ "format": "png", "captureBeyondViewport": true, "clip": clip });
        let shot = self.browser.call(Some(&self.session.clone()), "Page.captureScreenshot", params);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, base64(shot["data"].as_str().unwrap())).unwrap();
    }
}

/// Decodes standard base64 (what CDP sends binary data as).
fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let digits: Vec<u8> =
        text.bytes().filter(|c| *c != b'=' && !c.is_ascii_whitespace()).map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, d)| n | (u32::from(*d) << (18 - 6 * i)));
        out.extend(n.to_be_bytes()[1..chunk.len()].iter());
    }
    out
}

#[test]
fn base64_decodes() {
    assert_eq!(base64("aGVsbG8gd29ybGQ="), b"hello world");
    assert_eq!(base64("YQ=="), b"a");
    assert_eq!(base64("YWI="), b"ab");
}
