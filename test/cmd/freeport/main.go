// Command freeport picks the loopback ports of make run and make run-front:
// for each argument, the port it names if nothing holds it on 127.0.0.1,
// else one the kernel gives, and prints them, one a line, in order.
//
//	freeport 1053/dns 18080 =19153
//
// PORT/dns is a DNS server's port, wanted free for UDP and TCP; PORT alone
// is wanted for TCP (health, readiness, metrics). =PORT is a port the user
// chose: it is kept, and freeport fails, saying who asked, if it is taken.
// 0 asks for any free port. Every port printed is a different one. A port
// is only known free when freeport looks: a program that binds it a moment
// later may find it taken, so run freeport right before starting the
// servers that use the ports.
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: freeport [=]PORT[/dns]...")
		os.Exit(2)
	}
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "freeport: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	// Everything freeport binds stays bound until it has printed every
	// port, so that no two arguments get the same one.
	var held []io.Closer
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	var ports []int
	for _, arg := range args {
		spec := arg
		fixed := strings.HasPrefix(spec, "=")
		spec = strings.TrimPrefix(spec, "=")
		spec, dns := strings.CutSuffix(spec, "/dns")
		port, err := strconv.Atoi(spec)
		if err != nil || port < 0 || port > 65535 {
			return fmt.Errorf("%q: want [=]PORT[/dns], PORT from 0 to 65535", arg)
		}
		if port != 0 {
			ls, err := hold(port, dns)
			if err == nil {
				held = append(held, ls...)
				ports = append(ports, port)
				continue
			}
			if fixed {
				return fmt.Errorf("port %d on 127.0.0.1 is taken (%v): choose another, or leave it out for a free one", port, err)
			}
		}
		port, ls, err := kernelPort(dns)
		if err != nil {
			return err
		}
		held = append(held, ls...)
		ports = append(ports, port)
	}
	for _, p := range ports {
		fmt.Fprintln(out, p)
	}
	return nil
}

// hold binds port on 127.0.0.1 for TCP, and UDP with dns.
func hold(port int, dns bool) ([]io.Closer, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if !dns {
		return []io.Closer{l}, nil
	}
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		l.Close()
		return nil, err
	}
	return []io.Closer{l, u}, nil
}

// kernelPort returns a port the kernel gives, held.
func kernelPort(dns bool) (int, []io.Closer, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, nil, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !dns {
			return port, []io.Closer{l}, nil
		}
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			return port, []io.Closer{l, u}, nil
		}
		l.Close()
	}
	return 0, nil, errors.New("no port free for both TCP and UDP on 127.0.0.1")
}
