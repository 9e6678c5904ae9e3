// Command receiver is the notification endpoint of scripts/ceph/bench.sh:
// it acknowledges every POSTed event batch with 200 and counts records per
// bucket; GET /counts returns the counts as JSON. Go rather than Python so
// that the endpoint costs little CPU next to the gateways it measures.
package main

import (
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"sync"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:18080", "address to listen on")
	flag.Parse()
	var mu sync.Mutex
	counts := map[string]int{}
	http.HandleFunc("/counts", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(counts)
	})
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			Records []struct {
				S3 struct {
					Bucket struct {
						Name string `json:"name"`
					} `json:"bucket"`
				} `json:"s3"`
			} `json:"Records"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rec := range msg.Records {
			counts[rec.S3.Bucket.Name]++
		}
		mu.Unlock()
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}
