// Command kfakecluster runs an in-memory Kafka cluster (franz-go's kfake) on
// loopback for the fleet test: separate from the test process so that the
// collectors talk to it over real sockets, as to a real Kafka.
//
//	kfakecluster -port 0 -partitions 6 -topics evalbridge_spans,evalbridge_logs
//
// It prints "kfake listening on <addr>" once it accepts connections and runs
// until SIGTERM, SIGINT, or its standard input closes (so it never outlives a
// test that dies).
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "listen port on 127.0.0.1 (0: any free port)")
	partitions := flag.Int("partitions", 6, "partitions of each seeded topic")
	topics := flag.String("topics", "evalbridge_spans,evalbridge_logs", "comma-separated topics to create")
	minSession := flag.Duration("min-session-timeout", time.Second, "smallest consumer session_timeout the broker accepts")
	flag.Parse()

	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(*port),
		kfake.GroupMinSessionTimeout(*minSession),
		kfake.SeedTopics(int32(*partitions), strings.Split(*topics, ",")...),
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		log.Fatalf("kfake: %v", err)
	}
	defer c.Close()
	fmt.Printf("kfake listening on %s\n", c.ListenAddrs()[0])

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	stdinClosed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stdinClosed)
	}()
	select {
	case <-stop:
	case <-stdinClosed:
	}
}
