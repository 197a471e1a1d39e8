const lines = require('fs').readFileSync(0, 'utf8').split('\n');
const [n, k] = lines[0].split(' ').map(Number);
const colors = lines[2].trim();
const counts = new Array(26).fill(0);
for (const ch of colors) counts[ch.charCodeAt(0) - 97]++;
console.log(Math.max(...counts) <= k ? 'YES' : 'NO');
