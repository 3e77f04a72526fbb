package service

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Webhook headers (the style of privacy request platforms such as
// DataGrail): the timestamp in Unix seconds and "v1=" + base64 of
// HMAC-SHA256(secret, "<timestamp>:<body>").
const (
	HeaderTimestamp = "X-Webhook-Timestamp"
	HeaderSignature = "X-Webhook-Signature"
	// WebhookSkew is how far a webhook's timestamp may be from now.
	WebhookSkew = 5 * time.Minute
)

// SignWebhook returns the signature header value of body sent at ts.
func SignWebhook(secret []byte, ts time.Time, body []byte) (timestamp, signature string) {
	timestamp = strconv.FormatInt(ts.Unix(), 10)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp + ":"))
	m.Write(body)
	return timestamp, "v1=" + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// VerifyWebhook checks a webhook's timestamp (within WebhookSkew of now) and
// signature (any of the comma-separated v1= values). Errors are
// ErrUnauthorized and say which check failed, never the values.
func VerifyWebhook(secret []byte, timestamp, signature string, body []byte, now time.Time) error {
	if len(secret) == 0 {
		return fmt.Errorf("%w: the intake endpoint is not configured (serve.webhook_secret)", ErrUnauthorized)
	}
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s must be Unix seconds", ErrUnauthorized, HeaderTimestamp)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > WebhookSkew || d < -WebhookSkew {
		return fmt.Errorf("%w: %s is more than 5 minutes from now", ErrUnauthorized, HeaderTimestamp)
	}
	_, want := SignWebhook(secret, time.Unix(sec, 0), body)
	for _, v := range strings.Split(signature, ",") {
		if hmac.Equal([]byte(strings.TrimSpace(v)), []byte(want)) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s does not match the body", ErrUnauthorized, HeaderSignature)
}
