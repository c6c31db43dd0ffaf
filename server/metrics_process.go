package server

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// writeProcessMetrics adds the process and Go runtime families: file
// descriptors and their limit, goroutines, OS threads and memory. They use
// the names of the Prometheus Go client's collectors, so existing
// dashboards work. The /proc ones are left out where /proc is absent.
func writeProcessMetrics(x *exposition) {
	if n, err := openFDs(); err == nil {
		x.single("process_open_fds", "gauge", "Open file descriptors.", float64(n))
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		x.single("process_max_fds", "gauge", "Limit on open file descriptors (RLIMIT_NOFILE, soft).", float64(lim.Cur))
	}
	status := procStatus()
	if v, ok := status["Threads"]; ok {
		x.single("process_threads", "gauge", "OS threads of the process.", float64(v))
	}
	if v, ok := status["VmRSS"]; ok {
		x.single("process_resident_memory_bytes", "gauge", "Resident set size.", float64(v*1024))
	}
	x.single("go_goroutines", "gauge", "Goroutines that currently exist.", float64(runtime.NumGoroutine()))
	threads, _ := runtime.ThreadCreateProfile(nil)
	x.single("go_threads", "gauge", "OS threads the Go runtime created.", float64(threads))
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	x.single("go_memstats_heap_inuse_bytes", "gauge", "Heap bytes in in-use spans.", float64(ms.HeapInuse))
	x.single("go_memstats_sys_bytes", "gauge", "Bytes obtained from the OS by the Go runtime.", float64(ms.Sys))
}

// openFDs counts the entries of /proc/self/fd (minus the one reading it).
func openFDs() (int, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, err
	}
	return len(names) - 1, nil
}

// procStatus reads the numeric fields of /proc/self/status that the
// metrics use (Threads, VmRSS in kB); nil where /proc is absent.
func procStatus() map[string]int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok || (string(key) != "Threads" && string(key) != "VmRSS") {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseInt(string(fields[0]), 10, 64); err == nil {
			out[string(key)] = v
		}
	}
	return out
}
