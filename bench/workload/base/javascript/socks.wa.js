const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(' ').map(Number);
console.log(Math.min(a, b) + ' ' + Math.abs(a - b) / 2);
