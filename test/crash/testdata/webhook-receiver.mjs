// A webhook receiver for test/crash TestWebhooksThroughKill9: it checks
// each request with the standardwebhooks package (Standard Webhooks'
// own library, not tetherd's code), answers after DELAY_MS, and writes a
// JSON line per request to stdout: {id, type, eventId, body} when it
// verified, {bad} when it did not. Its first line is "listening <port>".
import http from 'node:http';
import { Webhook } from 'standardwebhooks';

const wh = new Webhook(process.env.WEBHOOK_SECRET);
const delay = Number(process.env.DELAY_MS || 0);

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    let line;
    let status = 204;
    try {
      const p = wh.verify(body, req.headers);
      line = { id: req.headers['webhook-id'], type: p.type, eventId: p.data && p.data.eventId, body };
    } catch (e) {
      line = { bad: `${req.headers['webhook-id']}: ${e.message}` };
      status = 400;
    }
    setTimeout(() => {
      process.stdout.write(JSON.stringify(line) + '\n');
      res.writeHead(status);
      res.end();
    }, delay);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
