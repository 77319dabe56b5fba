#!/usr/bin/env python3
"""Measure any build of the relay from outside, the same way for every build.

    python3 docs/bench-outside.py RELAY BENCH FOLDER OUT.json

RELAY is the relay executable to measure (any version with `serve`), BENCH a
current crosschat-relay whose `bench --url` drives it, FOLDER where its data
directory goes (/var/tmp for the disk, /dev/shm for tmpfs). It serves RELAY on
a free loopback port, runs `BENCH bench --url ... --queue-sizes "" --json`
against it, and samples the relay process itself: CPU time (/proc/PID/stat)
and RSS at the start and end of the lifecycle phase (marked by the bench's
progress lines), fsync calls in that phase (`perf stat -I` on the
syscalls:sys_enter_fsync and fdatasync tracepoints), then parks 1,000 waiting
claims on 1,000 fresh agents and takes the RSS a second after the last was
sent. It prints one JSON line and writes it with the bench's report to OUT.

`bench` measures its own child relays with the same figures from inside; this
script exists for builds older than that (docs/performance.md, fifteenth
session). It needs perf and root (or perf_event_paranoid <= -1).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

PARKED = 1000


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_seconds(pid):
    fields = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def rss_mib(pid):
    for line in open(f'/proc/{pid}/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError('no VmRSS')


def wait_healthy(port):
    deadline = time.time() + 30
    while True:
        try:
            urllib.request.urlopen(f'http://127.0.0.1:{port}/health', timeout=1)
            return
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)


def fsyncs_between(perf_out, t0, t1):
    """Sums perf's per-interval counts whose interval ends after t0 and by t1+20ms."""
    n = 0
    for line in open(perf_out):
        parts = line.split(',')
        if line.startswith('#') or len(parts) < 2 or not parts[1].isdigit():
            continue
        if t0 < float(parts[0]) <= t1 + 0.02:
            n += int(parts[1])
    return n


def park_claims(port, admin, pid):
    """Parks PARKED waiting claims, one per fresh agent and connection, and
    returns the RSS before and a second after the last was sent."""
    tokens = []
    for i in range(PARKED):
        body = json.dumps([{'slug': f'park-{i}', 'displayName': f'Park {i}', 'modelSlug': 'bench',
                            'capabilities': ['text-input', 'text-output']}]).encode()
        req = urllib.request.Request(f'http://127.0.0.1:{port}/bridge/Agents.Create', data=body, headers={
            'Content-Type': 'application/json', 'Authorization': 'Bearer ' + admin})
        tokens.append(json.loads(urllib.request.urlopen(req, timeout=30).read())['token'])
    time.sleep(1)
    before = rss_mib(pid)
    call = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'tools/call',
                       'params': {'name': 'claim_next_task', 'arguments': {'waitMs': 25000}}}).encode()
    conns = []
    for token in tokens:
        s = socket.create_connection(('127.0.0.1', port))
        s.sendall(b'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n'
                  b'Accept: application/json, text/event-stream\r\nAuthorization: Bearer ' + token.encode() +
                  b'\r\nContent-Length: ' + str(len(call)).encode() + b'\r\n\r\n' + call)
        conns.append(s)
    time.sleep(1)
    parked = rss_mib(pid)
    for s in conns:
        s.close()
    return before, parked


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    relay_bin, bench_bin, folder, out = sys.argv[1:]
    data = tempfile.mkdtemp(prefix='bench-outside-', dir=folder)
    port = free_port()
    relay = subprocess.Popen([relay_bin, 'serve', '--data-dir', data, '--port', str(port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    perf = None
    try:
        wait_healthy(port)
        admin = open(os.path.join(data, 'api-token')).read().strip()
        pid = relay.pid
        perf_out = data + '.perf'
        perf = subprocess.Popen(['perf', 'stat', '-e', 'syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync',
                                 '-p', str(pid), '-I', '20', '-x', ',', '-o', perf_out], stderr=subprocess.DEVNULL)
        perf_t0 = time.monotonic()
        time.sleep(0.3)
        idle = rss_mib(pid)
        bench = subprocess.Popen([bench_bin, 'bench', '--url', f'http://127.0.0.1:{port}', '--token', admin,
                                  '--queue-sizes', '', '--json'],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        start = end = None
        for line in bench.stderr:  # the bench's progress lines mark its phases
            if ' agents, ' in line and 'lifecycle:' in line:
                start = (time.monotonic() - perf_t0, cpu_seconds(pid))
            elif 'lifecycles in' in line:
                end = (time.monotonic() - perf_t0, cpu_seconds(pid), rss_mib(pid))
        report = json.loads(bench.stdout.read())
        if bench.wait() != 0 or start is None or end is None:
            sys.exit('bench failed')
        perf.send_signal(signal.SIGINT)
        perf.wait()
        lc = report['lifecycle']
        before, parked = park_claims(port, admin, pid)
        res = {
            'relay': relay_bin, 'folder': folder,
            'lifecyclesPerSec': lc['lifecyclesPerSec'], 'errors': lc['errors'],
            'cpuPerCallMs': (end[1] - start[1]) * 1000 / lc['ops'],
            'fsyncsPerLifecycle': fsyncs_between(perf_out, start[0], end[0]) / lc['tasks'],
            'wakeP50Ms': report['wake']['latency']['p50Ms'],
            'wakeP99Ms': report['wake']['latency']['p99Ms'],
            'idleRssMiB': idle, 'loadRssMiB': end[2],
            'parkedRssMiB': parked, 'perParkedKiB': (parked - before) * 1024 / PARKED,
        }
        json.dump({'summary': res, 'report': report}, open(out, 'w'), indent=1)
        print(json.dumps(res))
    finally:
        if perf and perf.poll() is None:
            perf.kill()
        os.killpg(relay.pid, signal.SIGTERM)
        relay.wait()
        shutil.rmtree(data, ignore_errors=True)
        if os.path.exists(data + '.perf'):
            os.remove(data + '.perf')


if __name__ == '__main__':
    main()
