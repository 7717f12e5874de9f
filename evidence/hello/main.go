// Command hello is the server evidence/load_driver.py loads: net/http answering "hello" to every request
// on 127.0.0.1:PORT, about the cheapest server a load driver can meet, so the figures are the driver's.
package main

import (
	"fmt"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: hello PORT")
		os.Exit(2)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello")) })
	if err := http.ListenAndServe("127.0.0.1:"+os.Args[1], handler); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
