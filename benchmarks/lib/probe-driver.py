# Asks an exporter's /probe for one probe per target per interval, evenly spread, for a duration, as Prometheus
# scraping N targets would; prints "probes successes" (an answer with `probe_success 1`). One plain-HTTP connection
# per request (`Connection: close`, as Prometheus' scrape of a fresh target); this process's CPU is not counted.
#
#   probe-driver.py PORT QUERY N INTERVAL DURATION
# QUERY is the query string, with {i} replaced by the target's number (1…N): "module=https_2xx&target=https://…/e{i}".
import asyncio, sys, time

port, query, n, interval, duration = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
done = ok = 0


async def probe(i):
    global done, ok
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /probe?{query.replace('{i}', str(i))} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    body = await reader.read()
    writer.close()
    done += 1
    ok += b"\nprobe_success 1" in body


async def main():
    start, tasks, k = time.monotonic(), set(), 0
    while k * interval / n < duration:
        delay = start + k * interval / n - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(probe(k % n + 1))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        k += 1
    while tasks:
        await asyncio.sleep(0.05)
    print(done, ok)


asyncio.run(main())
