const data = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
const [a, b, c] = data.sort((x, y) => x - y);
const need = c - (a + b) + 1;
console.log(Math.max(0, need));
