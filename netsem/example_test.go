package netsem_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/netsem"
)

// An HTTP server that handles at most 100 connections at once; further clients
// wait in the kernel's listen backlog.
func ExampleLimitListener() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	ln = netsem.LimitListener(ln, 100)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	})}
	go srv.Serve(ln)
	defer srv.Close()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://" + ln.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body))
	// Output: hello
}

// Listener on a semaphore of your own: Break stops the accept loop with its cause.
func ExampleListener() {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inner.Close()
	conns := semaphore.New(2, semaphore.WithName("conns"))
	ln := netsem.Listener(inner, conns)

	conns.Break(errors.New("shutting down"))
	_, err = ln.Accept()
	fmt.Println(errors.Is(err, semaphore.ErrBroken))
	// Output: true
}
