package redact

import "testing"

// Look-alikes after labels and in the shapes of ids, timestamps, versions,
// hashes and prices stay as they are: a label makes a bare digit run a
// phone only when it names a phone (hotel, telemetry, call_… do not).
func TestLookAlikesKept(t *testing.T) {
	r := defaultRedactor(t)
	for _, in := range []string{
		"id:5551234567", "order=4111111111111112", "ts=1710755267", "ts:1710755267123", "version=1.2.3.4",
		"build:10.0.19045.3803", "uuid=123e4567-e89b-12d3-a456-426614174000", "port:8080", "pid=12345",
		"hotel:5551234567", "telemetry=5551234567", "call_5551234567", "call #5551234567", "span_id=00f067aa0ba902b7",
		"2024-03-18T09:41:07.123456789Z", "1710755267.123456", "amount: 1234567.89", "+1.5%",
		"ISO 8601: 2024-03-18 09:41:07+01:00", "sku=00123456789012", "gtin 04012345678901", "ean:4006381333931",
		"price 1 234 567,89 €", "tracking 1Z999AA10123456784", "v2.14.0.1", "chrome/122.0.6261.94",
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36", "ratio 12345678/1234567", "card ending 4242",
		"cc **** **** **** 4242", "otp 482913", "zip 90210-1234", "lat 48.8566 lon 2.3522", "1.000.000 users",
		"10.000.000.000", "ipv6 ::ffff", "a::b::c", "12:34:56:78", "`order_id`: 20240318094107",
		`{"id": 1710755267123, "v": "1.2.3.4"}`, "[0.4111111111111111, 1e+15]", "x=0x4111111111111111",
		"node-10.0.0.1-pool", "k8s-1.28.4.1",
	} {
		if out := r.Text(in); out != in {
			t.Errorf("%q -> %q", in, out)
		}
	}
}
