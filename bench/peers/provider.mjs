// promptfoo's side of bench/peers.py: one attempt of the soev thread API per test case.
// Node's fetch does the HTTP work of bench/throughput.py's bare loop: open a thread, read
// its event stream (which ends right after the turn's `status` event), delete the thread.

export default class SoevThreadProvider {
  constructor(options) {
    this.baseUrl = options.config.baseUrl;
    this.agent = options.config.agent;
  }

  id() {
    return 'soev-thread';
  }

  async callApi(prompt) {
    const opened = await fetch(new URL('v1/chat/threads', this.baseUrl), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ input: { text: prompt }, agent: this.agent }),
    });
    if (opened.status !== 201) {
      return { error: `open: HTTP ${opened.status} ${await opened.text()}` };
    }
    const thread = opened.headers.get('x-soev-thread-id');
    let event = '';
    let reply = '';
    let ended = false;
    for (const line of (await opened.text()).split('\n')) {
      if (line.startsWith('event:')) {
        event = line.slice(6).trim();
      } else if (event === 'model_output' && line.startsWith('data:')) {
        reply = JSON.parse(line.slice(5)).content;
      } else if (event === 'status' && line.startsWith('data:')) {
        ended = true;
        break;
      }
    }
    const deleted = await fetch(new URL(`v1/chat/threads/${thread}`, this.baseUrl), {
      method: 'DELETE',
    });
    await deleted.arrayBuffer();
    if (!ended) {
      return { error: `thread ${thread}: the stream ended without a status event` };
    }
    return { output: reply };
  }
}
