// Package scrape fetches a Prometheus text endpoint for perfmetric (the I/O half: the
// parsing and the query evaluation are in the pure package perfmetric).
package scrape

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"colo/perfmetric"
)

// Fetch GETs url and parses the exposition, stamped with now() taken when the answer
// arrived.
func Fetch(ctx context.Context, client *http.Client, url string, now func() time.Time) (perfmetric.Scrape, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return perfmetric.Scrape{}, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return perfmetric.Scrape{}, err
	}
	defer resp.Body.Close()
	at := now()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return perfmetric.Scrape{}, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	s, err := perfmetric.ParseText(io.LimitReader(resp.Body, 16<<20), at)
	if err != nil {
		return perfmetric.Scrape{}, fmt.Errorf("GET %s: %w", url, err)
	}
	return s, nil
}
