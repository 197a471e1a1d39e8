const lines = require('fs').readFileSync(0, 'utf8').split('\n');
const [n, k] = lines[0].trim().split(' ').map(Number);
const colors = lines[1].trim();

const counts = {};
for (const ch of colors.slice(0, n)) {
  counts[ch] = (counts[ch] || 0) + 1;
}
// nobody may get two balloons of the same colour
const ok = Object.values(counts).every((c) => c <= k);
console.log(ok ? 'YES' : 'NO');
